"""The guard rail: an injected harm moves a canary back to shadow, with an alert naming the
figure, the arm and the interval (log, table, webhook, metric); no harm, too few tasks or
another mode leave the rollout alone, and promotion stays a person's."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest

from scoutless.config import RolloutSettings
from scoutless.history.panda_db import make_engine
from scoutless.ops.alerts import AlertConfig, read_alerts
from scoutless.ops.guard_rail import GuardGauges, check_guard_rail, judge
from scoutless.ops.impact import FIGURES, build_report
from scoutless.ops.rollout import read_rollout, set_rollout

SETTINGS = RolloutSettings(guard_min_tasks=30, guard_margin=0.02, bootstrap=300)


def _report(n: int, p_canary: float, p_control: float, seed: int = 0):  # type: ignore[no-untyped-def]
    """Figures of ``n`` canary and ``n`` control tasks of 10 jobs each, first attempts
    succeeding with the given probabilities."""
    rng = np.random.default_rng(seed)
    ok = np.concatenate([rng.binomial(10, p_canary, n), rng.binomial(10, p_control, n)])
    ids = np.arange(2 * n)
    figures = pd.DataFrame({f"{f}_{k}": 0.0 for f in FIGURES for k in ("num", "den")}, index=ids)
    figures["first_attempt_success_num"], figures["first_attempt_success_den"] = ok, 10.0
    arms = pd.DataFrame({"arm": ["canary"] * n + ["control"] * n,
                         "created_at": pd.Timestamp("2026-03-01")}, index=ids)  # fmt: skip
    return build_report(figures, arms, "1D", SETTINGS)


class _Receiver(BaseHTTPRequestHandler):
    received: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        _Receiver.received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def engine(tmp_path):  # type: ignore[no-untyped-def]
    return make_engine(f"sqlite:///{tmp_path / 'ops.sqlite'}")


def test_a_harmful_canary_goes_back_to_shadow_and_says_why(engine, caplog) -> None:  # type: ignore[no-untyped-def]
    server = HTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        set_rollout(engine, "canary", seed=0, share=0.5, reason="try")
        gauges = GuardGauges()
        config = AlertConfig(webhook_url=f"http://127.0.0.1:{server.server_port}/hook")
        with caplog.at_level("WARNING"):
            verdict = check_guard_rail(engine, _report(40, 0.7, 0.9), config=config,
                                       settings=SETTINGS, gauges=gauges)  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert verdict.tripped
    state = read_rollout(engine)
    assert (state.mode, state.changed_by) == ("shadow", "guard-rail")
    assert "first_attempt_success: canary − control" in state.reason
    [alert] = read_alerts(engine).to_dict("records")
    assert alert["rule"] == "rollout-guard" and alert["scope"] == "canary-vs-control"
    assert "[" in alert["message"] and "40/40 tasks" in alert["message"]
    [payload] = _Receiver.received
    assert payload["alerts"][0]["metric"] == "first_attempt_success"
    assert "shadow" in payload["alerts"][0]["message"]
    assert "guard rail tripped" in caplog.text
    assert gauges.tripped._value.get() == 1
    again = check_guard_rail(engine, _report(40, 0.7, 0.9), settings=SETTINGS)
    assert not again.tripped and "nothing to guard" in again.message  # now in shadow


def test_no_harm_few_tasks_or_no_canary_leave_the_rollout_alone(engine) -> None:  # type: ignore[no-untyped-def]
    set_rollout(engine, "canary", seed=0, share=0.5)
    held = check_guard_rail(engine, _report(40, 0.9, 0.9), settings=SETTINGS)
    assert not held.tripped and "person's decision" in held.message
    waiting = check_guard_rail(engine, _report(10, 0.5, 0.9), settings=SETTINGS)
    assert not waiting.tripped and "waiting" in waiting.message
    assert read_rollout(engine).mode == "canary"  # never promoted, never rolled back
    set_rollout(engine, "full", seed=0)
    assert not check_guard_rail(engine, _report(40, 0.5, 0.9), settings=SETTINGS).tripped


def test_a_small_drop_within_the_margin_does_not_trip() -> None:
    # a real but tiny drop (0.90 -> 0.89): the interval may exclude zero, the margin is 0.02
    verdict = judge(_report(2000, 0.89, 0.90, seed=3), SETTINGS)
    assert not verdict.tripped


def test_an_unknown_guard_figure_names_the_key() -> None:
    with pytest.raises(ValueError, match=r"rollout\.guard_figure"):
        judge(_report(40, 0.5, 0.9), RolloutSettings(guard_figure="happiness"))
