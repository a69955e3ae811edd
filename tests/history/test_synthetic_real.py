"""The generator against real ATLAS per-job records: within-task spread, mixed core counts,
and how far scouts are from their whole task (the replay's premise)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta
from synthetic_helpers import within_task_cv

from scoutless.config import get_settings
from scoutless.history.synthetic import generate_chunk
from scoutless.history.synthetic.realism import TaskJobs, real_task_jobs, scout_ratios

# shared/ lies beside the checkout (also in CI's fresh clone)
REAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces" / "panda"


def _real_files() -> list[Path]:
    files = sorted(REAL.glob("job_records_*.csv"))
    if not files:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the realism check: no PanDA job records under {REAL}")
        pytest.skip(f"real PanDA job records not found under {REAL}")
    return files


@pytest.fixture(scope="module")
def frames():
    return generate_chunk(8000, seed=8)


@pytest.fixture(scope="module")
def real():
    files = _real_files()
    frames = []
    for i, path in enumerate(files):
        jobs = pd.read_csv(path)
        if "jobstatus" in jobs.columns:
            jobs = jobs[jobs["jobstatus"] == "finished"]
        frames.append(jobs.assign(task=i))
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def generated(frames):
    jobs = frames.jobs
    jobs = jobs[jobs["jobstatus"] == "finished"]
    wall = (jobs["endtime"] - jobs["starttime"]).dt.total_seconds()
    return jobs.assign(wall_time=wall, task=jobs["jeditaskid"])


def _stats(jobs: pd.DataFrame) -> dict[str, np.ndarray]:
    cores = jobs["actualcorecount"].to_numpy(float)
    mixed = jobs.groupby("task")["actualcorecount"].nunique()
    big = jobs.groupby("task").size() >= 50
    return {
        "pss_cv": within_task_cv(jobs["task"].to_numpy(), jobs["maxpss"].to_numpy(float) / cores),
        "wall_cv": within_task_cv(jobs["task"].to_numpy(), jobs["wall_time"].to_numpy(float)),
        "mixed": (mixed[big] > 1).to_numpy(),
    }


def test_within_task_spread_and_mixed_cores_match_real_tasks(real, generated) -> None:
    r, g = _stats(real), _stats(generated)
    assert len(g["pss_cv"]) > 50
    for key in ("pss_cv", "wall_cv"):
        lo, hi = r[key].min(), r[key].max()
        assert lo <= np.median(g[key]) <= hi, (key, np.median(g[key]), lo, hi)
    # share of large tasks with mixed core counts: inside the 95% interval of the real share
    k, n = int(r["mixed"].sum()), len(r["mixed"])
    lo, hi = beta.ppf(0.025, k, n - k + 1), beta.ppf(0.975, k + 1, n - k)
    share = g["mixed"].mean()
    assert lo <= share <= hi, (share, lo, hi)


@pytest.fixture(scope="module")
def ratios(frames):
    settings = get_settings()
    real = scout_ratios(real_task_jobs(_real_files()), settings)
    return real, scout_ratios(TaskJobs(frames.jobs, frames.tasks), settings)


@pytest.mark.parametrize("target", ["memory", "walltime", "cputime", "io"])
def test_real_scouts_err_within_the_synthetic_spread(ratios, target) -> None:
    """Scouts' value / whole task's: every real task inside the synthetic P5-P95, and the
    typical error (median |log ratio|) within a factor 1.5 of the real one."""
    real, synthetic = (r[target].dropna().to_numpy() for r in ratios)
    assert len(real) >= 5 and len(synthetic) >= 500
    lo, hi = np.percentile(synthetic, [5, 95])
    assert ((real >= lo) & (real <= hi)).all(), (target, real.round(3), lo, hi)
    typical_real = np.median(np.abs(np.log(real)))
    typical = np.median(np.abs(np.log(synthetic)))
    assert typical_real / 1.5 <= typical <= typical_real * 1.5, (target, typical, typical_real)
