from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from ops_fakes import prediction_rows, small_history
from test_retrain import _registry_with_champion, _table, fake_loader, fake_trainer

from scoutless.config import RolloutSettings, Settings
from scoutless.history.db_write import write_frame
from scoutless.history.panda_db import create_schema, make_engine
from scoutless.ops import retrain as rt
from scoutless.ops.alerts import AlertConfig, AlertRule, read_alerts
from scoutless.ops.loop import MonitorContext, monitor_step, parse_interval, run_loop
from scoutless.ops.prediction_log import PredictionLog


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_finishes_current_step_then_exits_zero(signum: int) -> None:
    finished = []

    def step() -> None:
        threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
        time.sleep(0.3)
        finished.append(True)

    before = signal.getsignal(signum)
    assert run_loop(step, every_s=3600) == 0
    assert finished == [True]
    assert signal.getsignal(signum) is before  # handlers restored


def test_failing_step_does_not_end_the_loop(caplog) -> None:
    calls = []

    def step() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database down")

    assert run_loop(step, every_s=0, max_steps=2, install_signals=False) == 0
    assert len(calls) == 2 and "database down" in caplog.text


def test_parse_interval() -> None:
    assert parse_interval("1h") == 3600 and parse_interval("15min") == 900
    with pytest.raises(ValueError, match="not an interval"):
        parse_interval("often")


@pytest.mark.usefixtures("shallow_registry")
def test_step_collects_alerts_and_retrains(tmp_path: Path, monkeypatch) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'panda.sqlite'}")
    create_schema(engine)
    ids = list(range(1, 41))
    for name, frame in small_history(dict.fromkeys(ids, 6.0)).items():  # all >4GB
        write_frame(engine, name, frame)
    root = _registry_with_champion(tmp_path, {"reco": 1, "simul": 1})
    log = PredictionLog(engine)
    for day, chunk in ((1, ids[:20]), (2, ids[20:])):  # the champion said 1-2GB: wrong
        log.write(prediction_rows(chunk, [1] * 20, version="old",
                                  created_at=pd.Timestamp(f"2026-01-0{day} 12:00")))  # fmt: skip
    monkeypatch.setattr(rt, "build_recent_table", lambda *a, **k: _table())
    rule = AlertRule(name="acc", metric="accuracy", op="<", threshold=0.6, windows=2,
                     min_samples=10, retrain=True)  # fmt: skip
    ctx = MonitorContext(engine=engine, registry=root, settings=Settings(),
                         config=AlertConfig(rules=[rule]),
                         lookback=None, loader=fake_loader, trainer=fake_trainer)  # fmt: skip
    report = monitor_step(ctx)
    assert report.collected.n_collected == 40
    assert [a.rule for a in report.alerts] == ["acc"]
    assert report.retrained is not None and report.retrained.promoted
    assert len(read_alerts(engine)) == 1
    # the new champion has made no predictions yet: the next step fires nothing
    again = monitor_step(ctx)
    assert again.alerts == [] and again.retrained is None


@pytest.mark.usefixtures("shallow_registry")
def test_step_with_impact_collects_it_and_applies_the_guard_rail(tmp_path: Path) -> None:
    from prometheus_client import generate_latest

    from scoutless.ops.guard_rail import ImpactWatch
    from scoutless.ops.impact_store import read_impact
    from scoutless.ops.rollout import set_rollout

    engine = make_engine(f"sqlite:///{tmp_path / 'panda.sqlite'}")
    create_schema(engine)
    ids = list(range(1, 11))
    for name, frame in small_history(dict.fromkeys(ids, 2.0)).items():
        write_frame(engine, name, frame)
    root = _registry_with_champion(tmp_path, {"reco": 1, "simul": 1})
    PredictionLog(engine).write(prediction_rows(ids, [1] * 10, version="old"))
    set_rollout(engine, "canary", seed=0, share=0.5)
    watch = ImpactWatch(RolloutSettings())
    ctx = MonitorContext(engine=engine, registry=root, settings=Settings(), lookback=None,
                         loader=fake_loader,
                         retrain=None, impact=watch)  # fmt: skip
    report = monitor_step(ctx)
    tasks, jobs = read_impact(engine)
    assert len(tasks) == 10 and len(jobs) == 50
    assert report.guard is not None and not report.guard.tripped
    assert "waiting" in report.guard.message  # no canary/control arms logged: nothing judged
    assert b"scoutless_impact_figure" in generate_latest(watch.impact.registry)
