"""On real PanDA job records: the scouts strategy's ramCount is the target code's."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from replay_helpers import replay, settings_with

from scoutless.replay.workload import build_workload
from scoutless.sources.panda_jobs import read_panda_jobs
from scoutless.targets.estimators import compute_task_targets
from scoutless.targets.job_records import estimator_inputs

# shared/ lies beside the checkout (also in CI's fresh clone)
REAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "traces" / "panda"


@pytest.fixture(scope="module")
def real_jobs():
    files = sorted(REAL.glob("job_records_*.csv"))
    if not files:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the replay's real-data check: no records under {REAL}")
        pytest.skip(f"real PanDA job records not found under {REAL}")
    rows, _ = read_panda_jobs(files, skip_bad=True)
    return estimator_inputs(rows, "jeditaskid_of_task")


def test_scouts_ramcount_from_the_first_10_jobs_is_the_target_codes(real_jobs):
    jobs, tasks = real_jobs
    # the avalanche waits for all 10 scouts, so the replay sees the same 10 jobs
    settings = settings_with(avalanche_min_finished_share=1.0)
    work = build_workload(jobs, tasks, settings)
    run = replay(work, settings, ram=2000, scouts=True, retune=True)
    expected = compute_task_targets(jobs, tasks, settings=settings, scouts_only=True)["memory"]
    got = dict(zip(work.task_ids.tolist(), run.result_.scout_ram.tolist(), strict=True))
    assert len(got) == len(tasks) >= 5
    for task_id, ram in got.items():
        assert ram == pytest.approx(expected[task_id], rel=1e-12), task_id
    assert (work.n_scouts == 10).all()


def test_early_avalanche_uses_the_scouts_finished_by_then(real_jobs):
    jobs, tasks = real_jobs
    roomy = {name: {"cores": 100_000} for name in ("SCORE", "MCORE", "SCORE_HIMEM", "MCORE_HIMEM")}
    settings = settings_with(resource_types=roomy)  # production starts at the check itself
    work = build_workload(jobs, tasks, settings)
    run = replay(work, settings, ram=2000, scouts=True, retune=True)
    full = compute_task_targets(jobs, tasks, settings=settings, scouts_only=True)["memory"]
    # ramCount from 5–10 of the 10 scouts: within their spread, and finite for every task
    assert np.isfinite(run.result_.scout_ram).all()
    first = run.result_.first_production_s
    assert (first > 0).all() and (first % settings.replay.check_interval_s == 0).all()
    assert np.allclose(run.result_.scout_ram, full.loc[work.task_ids].to_numpy(), rtol=0.5)
