"""Fits side by side: the same bundle as one at a time, failures surface, plans are sane."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from scoutless.bundle import load_bundle
from scoutless.config import Settings
from scoutless.training import train_bundle
from scoutless.training.lanes import MAX_AUTO_LANES, plan_lanes, run_in_lanes


def test_plans_share_the_thread_budget() -> None:
    assert plan_lanes(2, 12) == plan_lanes(2, 12, 0)
    assert (plan_lanes(2, 12).lanes, plan_lanes(2, 12).threads) == (2, 1)
    assert (plan_lanes(16, 12).lanes, plan_lanes(16, 12).threads) == (MAX_AUTO_LANES, 4)
    assert (plan_lanes(1, 12).lanes, plan_lanes(1, 12).threads) == (1, 1)
    assert plan_lanes(8, 3).lanes == 3  # never more lanes than fits
    assert (plan_lanes(8, 12, lanes=1).lanes, plan_lanes(8, 12, lanes=1).threads) == (1, 8)


def test_lanes_run_at_once_and_keep_the_order() -> None:
    both = threading.Barrier(2, timeout=10)  # deadlocks (times out) unless two run at once

    def job(i: int):
        return lambda: (both.wait(), i)[1]

    assert run_in_lanes([job(0), job(1)], 2) == [0, 1]


def test_the_first_failure_is_raised_and_the_rest_cancelled() -> None:
    started: list[int] = []

    def job(i: int):
        def run() -> int:
            started.append(i)
            if i == 0:
                raise RuntimeError("fit 0 failed")
            return i

        return run

    with pytest.raises(RuntimeError, match="fit 0 failed"):
        run_in_lanes([job(i) for i in range(50)], 1)
    assert started == [0]
    with pytest.raises(RuntimeError, match="fit 0 failed"):
        run_in_lanes([job(i) for i in range(50)], 2)


def _predictions(bundle, table) -> dict[tuple[str, str], np.ndarray]:
    rows = bundle.validate_frame(table.frame.iloc[:300])
    return {
        (t, name): bundle.predict_proba(rows, targets=[t], model=name)[t]
        for t in bundle.targets
        for name in ("xgb", "dnn")
    }


def test_side_by_side_training_is_reproducible_and_matches_one_at_a_time(small_table, tmp_path):
    """Each DNN fit draws from its own generators: two runs with two lanes give the same
    bundle, and the same as fits one after another with the same threads per fit."""
    runs = {}
    for name, lanes in (("a", 2), ("b", 2), ("seq", 1)):
        path = train_bundle(small_table, tmp_path / name, models=["xgb", "dnn"], max_epochs=3,
                            progress=False, n_jobs=lanes, parallel_fits=lanes, settings=Settings())  # fmt: skip
        manifest = json.loads((path / "manifest.json").read_text())
        assert manifest["training"]["parallel_fits"] == lanes
        assert manifest["training"]["threads_per_fit"] == 1
        runs[name] = _predictions(load_bundle(path), small_table)
    for key, proba in runs["a"].items():
        np.testing.assert_array_equal(runs["b"][key], proba, err_msg=str(key))
        np.testing.assert_allclose(runs["seq"][key], proba, atol=1e-6, err_msg=str(key))
