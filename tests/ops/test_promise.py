"""The promise kept: realised under-allocation against each prediction's α per target,
group and window; a drift (memory × 1.75 for one processing type) breaches it for that
group only and alerts; the refitted calibration brings the next window back to ≤ α + 0.01;
it is registered in the registry and applied to what the listener sends."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from scoutless.config import RolloutSettings
from scoutless.ops.prediction_log import LOG_COLUMNS
from scoutless.ops.promise import (
    apply_factors,
    conformal_factor,
    current_calibration,
    judged,
    promise_alerts,
    promise_by_window,
    refit,
    register_calibration,
)
from scoutless.ops.registry import read_history

ALPHA = 0.1
GIVEN = 1000.0
SIGMA = 0.4
#: the need's median so that P(need > GIVEN) = ALPHA before the drift
MEDIAN = GIVEN / np.exp(SIGMA * 1.2815515655446004)
SETTINGS = RolloutSettings(promise_min_tasks=30)


def _needs(rng: np.random.Generator, n: int, drift: float = 1.0) -> np.ndarray:
    return MEDIAN * np.exp(SIGMA * rng.standard_normal(n)) * drift


def _log(
    n: int, day: str, first_id: int, drifted: set[str], rng
) -> tuple[pd.DataFrame, pd.DataFrame]:  # type: ignore[no-untyped-def]
    """n tasks per processing type logged on ``day`` at α with value GIVEN, and actuals."""
    preds, actuals = [], []
    tid = first_id
    for ptype in ("simul", "evgen"):
        for need in _needs(rng, n, 1.75 if ptype in drifted else 1.0):
            features = json.dumps({"processingtype": ptype, "gshare": "MC"})
            preds.append({"id": tid, "request_id": "r", "jeditaskid": tid, "model_version": "v",
                          "target": "memory", "class_id": 1, "class_label": "b",
                          "probabilities": "[]", "recommended_value": GIVEN, "policy": "risk",
                          "features": features, "created_at": pd.Timestamp(day),
                          "alpha": ALPHA, "arm": "full"})  # fmt: skip
            actuals.append({"jeditaskid": tid, "target": "memory", "value": need,
                            "class_id": 2, "collected_at": pd.Timestamp(day)})  # fmt: skip
            tid += 1
    return pd.DataFrame(preds, columns=LOG_COLUMNS), pd.DataFrame(actuals)


def test_a_drift_breaches_the_promise_for_its_group_and_the_refit_restores_it(tmp_path) -> None:
    rng = np.random.default_rng(4)
    before = _log(2000, "2026-03-01", 1, set(), rng)
    after = _log(2000, "2026-03-02", 100_000, {"simul"}, rng)
    preds = pd.concat([before[0], after[0]], ignore_index=True)
    actuals = pd.concat([before[1], after[1]], ignore_index=True)
    rows = judged(preds, actuals)
    table = promise_by_window(rows, "1D", SETTINGS).set_index(["window_start", "group"])
    day1, day2 = pd.Timestamp("2026-03-01"), pd.Timestamp("2026-03-02")
    assert table.loc[(day1, "all"), "rate"] == pytest.approx(ALPHA, abs=0.02)
    assert not table.loc[day1, "breached"].any()  # the promise holds before the drift
    assert table.loc[(day2, "processingtype=simul"), "breached"]
    assert table.loc[(day2, "processingtype=simul"), "rate"] > 0.5
    assert not table.loc[(day2, "processingtype=evgen"), "breached"]
    alerts = promise_alerts(promise_by_window(rows, "1D", SETTINGS))
    scopes = {a.scope for a in alerts}
    assert "memory:processingtype=simul" in scopes and "memory:processingtype=evgen" not in scopes

    recal = refit(rows, day2, ALPHA, min_n=200)  # the rolling window: the drifted day
    assert recal.factors["memory"]["processingtype=simul"] == pytest.approx(1.75, rel=0.1)
    assert recal.factors["memory"]["processingtype=evgen"] == pytest.approx(1.0, abs=0.05)
    following = _needs(np.random.default_rng(9), 20_000, 1.75)  # the next window, still drifted
    given = GIVEN * recal.factor("memory", {"processingtype": "simul", "gshare": "MC"})
    assert (following > given).mean() <= ALPHA + 0.01

    path = register_calibration(tmp_path, recal)
    assert path.is_file() and current_calibration(tmp_path).version == recal.version
    assert read_history(tmp_path)[-1]["action"] == "calibrate"
    targets = {"memory": {"recommended_value": GIVEN}, "io": {"recommended_value": 5.0}}
    scaled = apply_factors(targets, current_calibration(tmp_path), {"processingtype": "simul"})
    assert scaled["memory"]["recommended_value"] == pytest.approx(given)
    assert scaled["memory"]["calibration"] == recal.version and scaled["io"] == targets["io"]


def test_predictions_without_a_recorded_alpha_are_not_judged() -> None:
    preds, actuals = _log(50, "2026-03-01", 1, set(), np.random.default_rng(0))
    preds["alpha"] = None
    assert judged(preds, actuals).empty
    assert promise_by_window(judged(preds, actuals), "1D", SETTINGS).empty


def test_conformal_factor_is_the_finite_sample_quantile() -> None:
    scores = np.arange(1, 20, dtype=float)  # n = 19: ceil(20 · 0.9) = 18th smallest
    assert conformal_factor(scores, 0.1) == 18.0
    assert conformal_factor(scores[:5], 0.1) == float("inf")  # too few for α = 0.1


def test_the_listener_logs_the_values_it_sent_after_a_calibration() -> None:
    from scoutless.allocation.arms import Assignment
    from scoutless.panda.prediction import _with_arm

    row = {"jeditaskid": 7, "predictions": json.dumps({"memory": {"recommended_value": 1000.0}})}
    sent = {7: {"memory": {"recommended_value": 1750.0, "calibration": "v1"}}}
    arm = {7: Assignment("canary", True, "canary: draw 0.1 < share 0.5")}
    logged = _with_arm(row, arm, 0.05, sent)
    assert json.loads(logged["predictions"])["memory"]["recommended_value"] == 1750.0
    assert (logged["arm"], logged["alpha"]) == ("canary", 0.05)
    plain = _with_arm(row, {}, 0.05, {})
    assert plain["predictions"] == row["predictions"] and "arm" not in plain


def test_monitor_promise_cli_alerts_and_registers_a_refit(tmp_path, monkeypatch) -> None:
    from ops_fakes import ScriptedPredictor, prediction_rows, small_history
    from typer.testing import CliRunner

    from scoutless.cli import monitor
    from scoutless.cli.main import app
    from scoutless.history.db_write import write_frame
    from scoutless.history.panda_db import create_schema, make_engine
    from scoutless.ops.alerts import read_alerts
    from scoutless.ops.prediction_log import PredictionLog

    url = f"sqlite:///{tmp_path / 'panda.sqlite'}"
    engine = make_engine(url)
    create_schema(engine)
    ids = list(range(1, 41))
    for name, frame in small_history(dict.fromkeys(ids, 6.0)).items():  # needs ~6.6 GB/core
        write_frame(engine, name, frame)
    rows = prediction_rows(ids, [1] * 40, created_at=pd.Timestamp.now(),
                           features=[{"processingtype": "simul", "gshare": "MC"}] * 40)  # fmt: skip
    for row in rows:  # the value given: 2 GB per core, at alpha 0.1
        row["predictions"]["memory"]["recommended_value"] = 2000.0
        row["alpha"] = 0.1
    PredictionLog(engine).write(rows)
    monkeypatch.setattr(monitor, "_load_champion", lambda _: ScriptedPredictor("v1", {}))
    registry = tmp_path / "reg"
    result = CliRunner().invoke(app, ["monitor", "promise", "--registry", str(registry),
                                      "--db", url, "--refit-days", "30"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "calibration" in result.output and "registered" in result.output
    assert {"memory:all", "memory:processingtype=simul"} <= set(read_alerts(engine)["scope"])
    recal = current_calibration(registry)
    assert recal is not None and recal.factors["memory"]["processingtype=simul"] > 3
