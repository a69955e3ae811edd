"""The generator against real ATLAS per-job records (within-task spread, mixed core counts)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta
from synthetic_helpers import within_task_cv

from scoutless.history.synthetic import generate_chunk

# shared/ lies beside the checkout (also in CI's fresh clone)
REAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces" / "panda"


@pytest.fixture(scope="module")
def real():
    files = sorted(REAL.glob("job_records_*.csv"))
    if not files:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the realism check: no PanDA job records under {REAL}")
        pytest.skip(f"real PanDA job records not found under {REAL}")
    frames = []
    for i, path in enumerate(files):
        jobs = pd.read_csv(path)
        if "jobstatus" in jobs.columns:
            jobs = jobs[jobs["jobstatus"] == "finished"]
        frames.append(jobs.assign(task=i))
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def generated():
    jobs = generate_chunk(3000, seed=8).jobs
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
