from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pandas as pd
import pytest

from scoutless.history.panda_db import make_engine
from scoutless.ops.alerts import (
    AlertConfig,
    AlertRule,
    evaluate_rules,
    fire,
    load_alert_config,
    read_alerts,
)


def _long(values: list[float], metric: str = "accuracy", n: int = 50) -> pd.DataFrame:
    starts = pd.date_range("2026-01-01", periods=len(values), freq="1D")
    return pd.DataFrame({"window_start": starts, "scope": "memory", "metric": metric,
                         "value": values, "n": n})  # fmt: skip


def test_rule_needs_consecutive_breaching_windows() -> None:
    rule = AlertRule(name="acc", metric="accuracy", op="<", threshold=0.6, windows=2)
    assert evaluate_rules(_long([0.9, 0.5, 0.7]), [rule]) == []
    assert evaluate_rules(_long([0.9, 0.5]), [rule]) == []
    [alert] = evaluate_rules(_long([0.9, 0.5, 0.4]), [rule])
    assert alert.value == 0.4 and alert.window_start == pd.Timestamp("2026-01-03")
    assert "accuracy of memory = 0.4 < 0.6 for 2 window(s)" in alert.message


def test_rule_skips_small_windows_and_other_scopes() -> None:
    rule = AlertRule(name="psi", metric="psi", op=">", threshold=0.2, min_samples=30)
    assert evaluate_rules(_long([0.9], metric="psi", n=10), [rule]) == []
    scoped = rule.model_copy(update={"scope": "corecount"})
    assert evaluate_rules(_long([0.9], metric="psi"), [scoped]) == []
    assert len(evaluate_rules(_long([0.9], metric="psi"), [rule])) == 1


def test_config_from_toml(tmp_path) -> None:
    path = tmp_path / "alerts.toml"
    path.write_text('every = "1h"\nwebhook_url = "http://127.0.0.1:1/x"\n'
                    '[[rules]]\nname = "a"\nmetric = "macro_f1"\nop = "<="\nthreshold = 0.5\n')  # fmt: skip
    config = load_alert_config(path)
    assert config.every == "1h" and [r.name for r in config.rules] == ["a"]
    path.write_text('[[rules]]\nname = "a"\nmetric = "nonsense"\nop = "<"\nthreshold = 1\n')
    with pytest.raises(ValueError, match="invalid alert config"):
        load_alert_config(path)
    assert {r.metric for r in AlertConfig().rules} >= {"accuracy", "psi"}


class _Receiver(BaseHTTPRequestHandler):
    received: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        _Receiver.received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_fire_records_once_logs_and_posts_webhook(tmp_path, caplog) -> None:
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        engine = make_engine(f"sqlite:///{tmp_path / 'ops.sqlite'}")
        url = f"http://127.0.0.1:{server.server_port}/hook"
        rule = AlertRule(name="acc", metric="accuracy", op="<", threshold=0.6, severity="critical")
        config = AlertConfig(rules=[rule], webhook_url=url)
        candidates = evaluate_rules(_long([0.5]), config.rules)
        with caplog.at_level("WARNING", logger="scoutless.alerts"):
            assert len(fire(engine, candidates, config)) == 1
        assert "ALERT acc: accuracy of memory" in caplog.text
        assert fire(engine, candidates, config) == []  # same window: no news
        assert len(read_alerts(engine)) == 1
        [payload] = _Receiver.received
        assert payload["alerts"][0]["rule"] == "acc" and payload["alerts"][0]["value"] == 0.5
    finally:
        server.shutdown()
        server.server_close()


def test_webhook_failure_is_logged_not_raised(tmp_path, caplog) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'ops.sqlite'}")
    config = AlertConfig(rules=[AlertRule(name="acc", metric="accuracy", op="<", threshold=1)],
                         webhook_url="http://127.0.0.1:9/unreachable", webhook_timeout_s=0.5)  # fmt: skip
    with caplog.at_level("ERROR", logger="scoutless.alerts"):
        assert len(fire(engine, evaluate_rules(_long([0.5]), config.rules), config)) == 1
    assert "webhook" in caplog.text
    assert len(read_alerts(engine)) == 1
