"""Walk-forward evaluation: periods train only on what had finished, and report served."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.config import Settings
from scoutless.features.history import seconds
from scoutless.features.spec import FeatureSpec
from scoutless.sources.assemble import TraceJobs, to_training_table
from scoutless.training.walk_forward import (
    WalkForwardError,
    parse_period,
    parse_retrain_every,
    periods,
    retrain_steps,
    walk_forward,
)


def bursty_trace(n: int = 800, seed: int = 0) -> TraceJobs:
    """Users submitting bursts of similar jobs over 120 days, with a walltime request."""
    rng = np.random.default_rng(seed)
    users = rng.integers(0, 12, n)
    start = pd.Timestamp("2024-01-01", tz="UTC")
    submit = start + pd.to_timedelta(np.sort(rng.uniform(0, 120 * 86400, n)), unit="s")
    level = np.exp(rng.normal(7, 1.5, 12))[users] * np.exp(rng.normal(0, 0.2, n))
    frame = pd.DataFrame({
        "jeditaskid": np.arange(n), "creationdate": submit,
        "finished_at": submit + pd.to_timedelta(level, unit="s"),
        "user": users.astype(str), "executable": (users % 4).astype(str),
        "queue": rng.choice(["a", "b"], n), "walltime_value": level,
        "walltime_request": level * rng.uniform(1, 4, n),
    })  # fmt: skip
    features = [FeatureSpec("user", "categorical"), FeatureSpec("queue", "categorical")]
    return TraceJobs(frame, features, {"walltime": "s"}, "test")


@pytest.fixture(scope="module")
def table():
    return to_training_table(bursty_trace(), n_quantiles=3, settings=Settings())


def test_parse_period():
    assert parse_period("30d") == 30 * 86400 and parse_period("12h") == 43200
    with pytest.raises(WalkForwardError, match="30 days"):
        parse_period("30 days")


def test_parse_retrain_every_none_means_one_bundle_per_period():
    assert parse_retrain_every("7d") == 7 * 86400
    assert parse_retrain_every(None) is None and parse_retrain_every("None") is None
    with pytest.raises(WalkForwardError, match="--retrain-every 'weekly'"):
        parse_retrain_every("weekly")


def test_periods_train_only_on_rows_finished_before_the_period(table):
    steps = periods(table, parse_period("7d"))
    assert len(steps) >= 2
    submit = seconds(table.frame["creationdate"])
    finished = seconds(table.frame["finished_at"])
    tested = np.concatenate([p.test for p in steps])
    assert len(np.unique(tested)) == len(tested)  # each row predicted once
    assert set(tested) == set(np.flatnonzero(table.frame["split_time"].eq("test")))
    for p in steps:
        begins = submit[p.test].min()
        assert (finished[p.train] < begins).all() and (submit[p.train] < begins).all()


def test_retraining_within_a_period_scores_the_same_rows_on_fresher_training(table):
    """A period of about 18 days retrained weekly: the same rows are predicted, each part by a bundle
    trained only on rows finished before the part began, and later parts know more."""
    submit = seconds(table.frame["creationdate"])
    finished = seconds(table.frame["finished_at"])
    whole = periods(table, parse_period("30d"))[-1]
    parts = retrain_steps(table, whole, parse_period("7d"))
    assert len(parts) >= 3 and retrain_steps(table, whole, None) == [whole]
    tested = np.concatenate([p.test for p in parts])
    assert sorted(tested) == sorted(whole.test)
    for p in parts:
        begins = submit[p.test].min()
        assert (finished[p.train] < begins).all() and (submit[p.train] < begins).all()
    assert all(len(a.train) <= len(b.train) for a, b in itertools.pairwise(parts))
    assert len(parts[-1].train) > len(whole.train)


def test_walk_forward_reports_served_and_baselines_and_the_cli_writes_json(table, tmp_path):
    result = walk_forward(table, "14d", models=("xgb",), max_periods=2, train_options={"n_jobs": 1}, settings=Settings())
    overall = result["overall"]["walltime"]
    assert {"xgb", "served", "last2", "user_request"} <= set(overall)
    n = sum(e["walltime"]["served"]["n"] for e in result["periods"] if "walltime" in e)
    assert overall["served"]["n"] == n
    weekly = walk_forward(table, "14d", models=("xgb",), max_periods=2, retrain_every="7d",
                          train_options={"n_jobs": 1}, settings=Settings())  # fmt: skip
    assert weekly["overall"]["walltime"]["served"]["n"] == n
    assert weekly["retrain_every"] == "7d" and len(weekly["periods"][-1]["rows_train"]) >= 2
    path = tmp_path / "table.parquet"
    table.save(path)
    out = tmp_path / "wf"
    args = ["evaluate", "--walk-forward", "30d", "--models", "xgb", "--table", str(path),
            "--out", str(out), "--max-periods", "1", "--retrain-every", "10d"]  # fmt: skip
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    written = json.loads((out / "walk_forward.json").read_text())
    assert len(written["periods"]) == 1 and "overall" in run.output
    assert written["retrain_every"] == "10d"
    bad = CliRunner().invoke(app, [*args[:2], "soon", *args[3:]])
    assert bad.exit_code == 2 and "expected a number" in bad.output


def test_the_bundle_serves_exactly_what_training_guarded(table, tmp_path):
    """Save -> load: served probabilities are the recorded rule applied to the raw model's,
    with the baseline class read from the request's own input column."""
    from scoutless.bundle import load_bundle
    from scoutless.models.guard import ServingGuard, baseline_feature_columns
    from scoutless.training import train_bundle

    path = train_bundle(table, tmp_path / "b", models=["xgb"], split="time", progress=False, settings=Settings())
    predictor = load_bundle(path)
    record = predictor.manifest["guard"]["walltime"]
    assert record["validation"]["robust_selection"]["quantile"] > 0
    guard = ServingGuard.from_dict(record)
    test = table.split("time")[1]
    X = test[[f.name for f in predictor.feature_specs]]
    served = predictor.predict_proba(X, ["walltime"], "served")["walltime"]
    raw = predictor.predict_proba(X, ["walltime"], guard.model)["walltime"]
    column = baseline_feature_columns("walltime")[guard.baseline or "last2"]
    text = X[column].astype(str)
    n_classes = raw.shape[1]
    classes = np.array([int(v) if v.isdigit() and int(v) < n_classes else -1 for v in text])
    np.testing.assert_allclose(served, guard.apply(raw, classes if guard.baseline else None))
    np.testing.assert_allclose(served.sum(axis=1), 1.0)


@pytest.mark.parametrize("missing", ["user", "walltime_request"])
def test_walk_forward_runs_on_a_trace_without_users_or_requests(missing):
    """Logs differ in what they record: without users there is no history key but the
    request (last-2 falls back to it); without requests, no user_request baseline."""
    trace = bursty_trace(400, seed=1)
    frame = trace.frame.copy()
    frame[missing] = None if missing == "user" else np.nan
    features = [f for f in trace.features if f.name != missing]
    table = to_training_table(TraceJobs(frame, features, trace.units, "test"), n_quantiles=3, settings=Settings())
    result = walk_forward(table, "14d", models=("xgb",), max_periods=1, train_options={"n_jobs": 1}, settings=Settings())
    overall = result["overall"]["walltime"]
    assert overall["served"]["n"] == overall["xgb"]["n"] > 0
    assert 0 <= overall["served"]["macro_f1"] <= 1
    if missing == "user":  # no user has history: last-2 is the request throughout
        assert overall["last2"] == overall["user_request"]
