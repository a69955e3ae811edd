"""The real-ATLAS-jobs benchmark's walk on a hand-made job-records file: the rows it drops,
the kill rule and its accounting, and the feedback lag (no outcome before the next 100
jobs were released)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from benchmark_modules import benchmark_module

LAG = 100


def write_records(path: Path, n: int) -> Path:
    """n usable jobs (need 1000 + k MB, input size k bytes, shuffled pandaids) and three
    rows to drop: a minramcount of 0, a failed job, one without a maxPSS."""
    rows = [
        {"pandaid": 5000 + k, "minramcount": 2700, "maxpss": (1000 + k) * 1024.0,
         "wall_time": 3600, "actualcorecount": 1, "inputfilebytes": k, "jobstatus": "finished"}
        for k in range(n)
    ]  # fmt: skip
    base = {"minramcount": 2700, "maxpss": 1024.0, "wall_time": 10, "actualcorecount": 1,
            "inputfilebytes": 0, "jobstatus": "finished"}  # fmt: skip
    rows += [
        {**base, "pandaid": 1, "minramcount": 0},
        {**base, "pandaid": 2, "jobstatus": "failed"},
        {**base, "pandaid": 3, "maxpss": float("nan")},
    ]
    pd.DataFrame(rows[::-1]).to_csv(path, index=False)
    return path


class Recorder:
    """A stand-in online sizer that records when each outcome reached it."""

    def __init__(self) -> None:
        self.sized = 0  # first attempts sized so far
        self.learnt: list[tuple[int, int, bool]] = []  # (jobs sized then, job, censored)

    def first(self, key: str, f) -> float:  # type: ignore[no-untyped-def]
        self.sized += 1
        return 1500.0  # MB a core: jobs above it are killed at factor 1

    def knows(self, key: str) -> bool:
        return True

    def retry(self, key: str, f, failed: float) -> float:  # type: ignore[no-untyped-def]
        return failed * 2

    def learn(self, key: str, f, outcome) -> None:  # type: ignore[no-untyped-def]
        self.learnt.append((self.sized, int(f.input_size), outcome.censored))


def test_rows_are_dropped_and_counted_and_jobs_ordered_by_pandaid(tmp_path):
    with benchmark_module("atlas_walk") as walk:
        jobs = walk.read_task(write_records(tmp_path / "job_records_123.csv", 5))
    assert jobs.task == "123"
    assert jobs.dropped == {"minramcount_0": 1, "not_finished": 1, "no_maxpss_or_wall": 1}
    assert list(jobs.pandaid) == [5000, 5001, 5002, 5003, 5004]
    assert jobs.need_mb[2] == pytest.approx(1002.0)


def test_no_outcome_is_learnt_before_the_next_100_jobs_were_released(tmp_path):
    with benchmark_module("atlas_walk") as walk:
        jobs = walk.read_task(write_records(tmp_path / "job_records_1.csv", 700))
        online = Recorder()
        tally = walk.walk_task(jobs, "engine", 1.0, lag=LAG, online=online)
    assert online.learnt, "outcomes are learnt once the lag has passed"
    for sized, job, _ in online.learnt:
        # learnt before sizing job `sized`: jobs job+1 … job+100 were all released
        assert sized - 1 - job >= LAG
    # job 0's outcome comes just before job 101 is sized, never earlier
    assert online.learnt[0][:2] == (LAG + 1, 0)
    # needs 1500 … 1699 MB run above 1500 MB a job: killed once, then fit at 3000 MB
    assert tally.kills == 199
    # each killed job's bound is learnt beside its need; the last 100 jobs' never are
    killed = {job for _, job, censored in online.learnt if censored}
    assert killed == set(range(501, 700 - LAG - 1))


def test_a_recorded_job_killed_climbs_the_ladder_and_is_charged(tmp_path):
    path = tmp_path / "job_records_7.csv"
    pd.DataFrame([{"pandaid": 1, "minramcount": 900, "maxpss": 1000 * 1024.0,
                   "wall_time": 3600, "actualcorecount": 1,
                   "inputfilebytes": 1}]).to_csv(path, index=False)  # fmt: skip
    with benchmark_module("atlas_walk") as walk:
        jobs = walk.read_task(path)
        tally = walk.walk_task(jobs, "recorded", 1.0)
        gbh = walk.GBH
    # killed where its PSS crosses 900 MB (0.9 of the run); the ramCount 900 MB
    # decompensated is 1000 MB, the ladder's next step 2000, compensated 1800 MB
    assert tally.kills == 1
    assert tally.failed_gbh == pytest.approx(900 * 3600 * 0.9 * gbh)
    assert tally.slack_gbh == pytest.approx((1800 - 1000) * 3600 * gbh)
    assert math.isclose(tally.summary()["wasted_gbh"], tally.failed_gbh + tally.slack_gbh)


def _pair_waste(need, weight, first, retry):  # type: ignore[no-untyped-def]
    """The walk's strict-limit accounting of one (first, retry) pair, job by job."""
    top, total = max(need), 0.0
    for n, u in zip(need, weight, strict=True):
        for a in (first, retry, top):
            if a >= n:
                total += (a - n) * u
                break
            total += a * a / n * u  # killed when its PSS crosses a, after wall × a / n
    return total


def test_the_best_pair_in_hindsight_is_the_cheapest_of_every_pair_of_needs():
    rng = np.random.default_rng(3)
    need = rng.lognormal(7.5, 0.2, 40)
    need[5] = need[6]  # a tie
    weight = rng.uniform(100, 5000, 40)
    with benchmark_module("atlas_hindsight") as hindsight:
        best = hindsight.best_pair(need, weight)
    brute = min((_pair_waste(need, weight, a, b), a, b) for a in need for b in need if b > a)
    no_kill = _pair_waste(need, weight, need.max(), need.max())
    assert best["waste"] == pytest.approx(min(brute[0], no_kill), rel=1e-12)
    assert best["waste"] == pytest.approx(_pair_waste(need, weight, best["first"], best["retry"]))
    assert best["first"] < best["retry"] <= need.max()


def test_a_task_is_bounded_by_its_lag_window_before_its_hindsight():
    engine = {"wasted_gbh": 100.0, "wasted_after_lag_gbh": 20.0}
    with benchmark_module("atlas_hindsight") as hindsight:
        lag = hindsight.factor_1_bounds(
            engine, {"wasted_gbh": 100.0}, {"after_lag_gbh": 5.0, "kills": 1.0}, 0.7
        )
        pair = hindsight.factor_1_bounds(
            engine, {"wasted_gbh": 200.0}, {"after_lag_gbh": 70.0, "kills": 1.0}, 0.7
        )
        free = hindsight.factor_1_bounds(
            engine, {"wasted_gbh": 200.0}, {"after_lag_gbh": 5.0, "kills": 1.0}, 0.7
        )
    assert (lag["bounded_by"], lag["lag_window_ratio"]) == ("lag", 0.8)
    assert (pair["bounded_by"], pair["hindsight_ratio"]) == ("hindsight", 0.75)
    assert free["bounded_by"] is None and free["hindsight_gbh"] == 85.0


def test_the_best_pair_online_learns_a_step_only_once_its_outcome_is_known():
    """Lag 1, a pair chosen before every release: job 2 knows job 0 (1000 MB, fits
    exactly); job 3 knows jobs 0–1 and is killed at 1000 MB (after 1000/2000 of its run),
    then fits at twice that; job 4 knows jobs 0–2, not job 3's step: killed once more."""
    jobs = SimpleNamespace(
        need_mb=np.array([1000.0, 1000.0, 1000.0, 2000.0, 2000.0]), cores=np.ones(5),
        wall_s=np.ones(5),
    )  # fmt: skip
    with benchmark_module("atlas_hindsight") as hindsight:
        online = hindsight.follow_leader(jobs, lag=1, every=1)
        after = hindsight.follow_leader(
            SimpleNamespace(need_mb=jobs.need_mb, cores=jobs.cores, wall_s=jobs.wall_s * 3),
            lag=1, every=1,
        )  # fmt: skip
    assert online == {"waste": 1000.0, "kills": 2.0}  # 2 × 1000 holds 2000 exactly
    assert after["waste"] == 3 * online["waste"]


def test_a_job_tries_each_larger_allocation_then_fits_at_its_need():
    with benchmark_module("atlas_hindsight") as hindsight:
        once = hindsight.attempts_waste(100.0, 2.0, [50.0, 50.0, 120.0])
        every = hindsight.attempts_waste(100.0, 1.0, [30.0, 40.0, 45.0])
    assert once == (50 * 50 / 100 * 2 + 20 * 2, 1)  # killed at 50, the repeat skipped
    assert every == (9 + 16 + 20.25 + 81 + 80, 4)  # killed at each and at 90, fits at 180


def test_the_bounds_report_the_best_pair_online_beside_them():
    engine = {"wasted_gbh": 100.0, "wasted_after_lag_gbh": 20.0}
    after = {"after_lag_gbh": 5.0, "kills": 1.0, "online_after_lag_gbh": 65.0, "online_kills": 4.0}
    with benchmark_module("atlas_hindsight") as hindsight:
        out = hindsight.factor_1_bounds(engine, {"wasted_gbh": 200.0}, after, 0.7)
    assert out["bounded_by"] is None
    online = (out["online_pair_gbh"], out["online_pair_ratio"], out["online_pair_kills"])
    assert online == (145.0, 0.725, 4.0)


def test_the_penalty_sweep_walks_the_engine_at_each_penalty_against_one_recorded_walk(
    tmp_path, monkeypatch
):
    path = write_records(tmp_path / "job_records_7.csv", 160)
    with benchmark_module("atlas_jobs") as jobs:
        seen = []

        class Seen(jobs.OnlineSide):
            def __init__(self, sizing=None):
                seen.append(sizing.failure_penalty)
                super().__init__(sizing)

        monkeypatch.setattr(jobs, "OnlineSide", Seen)
        sweep = jobs.penalty_sweep([path], [0.0, 4.0], lag=LAG)
    assert seen == [0.0, 4.0]
    assert sweep["penalties"] == [0.0, 4.0] and sweep["default"] == 0.25
    points = sweep["tasks"]["7"]
    assert set(points) == {"0", "4"}
    for point in points.values():
        assert point["waste_ratio"] > 0 and point["kills"] >= 0
