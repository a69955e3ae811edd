"""The priced total: its components by hand, and oracle (each job its own need) never
dearer than a hand-built alternative on a toy pool."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from replay_helpers import jobs_frame, replay, settings_with, tasks_frame

from scoutless.config import AllocationSettings, Prices
from scoutless.replay.checks import bounds
from scoutless.replay.pool import pool_cores
from scoutless.replay.priced import COMPONENTS, priced_total
from scoutless.replay.runner import run_strategies
from scoutless.replay.submission import Submission, measured_values, oracle_submission
from scoutless.replay.workload import build_workload

PRICES = AllocationSettings()


def _toy(settings):
    """Four tasks whose jobs differ: memory 800-2,600 MB, walls 1-30 h, two scouts each."""
    rng = np.random.default_rng(5)
    frames = []
    for t in (1, 2, 3, 4):
        walls = list(np.round(rng.uniform(1.0, 30.0 if t == 4 else 8.0, 12), 2))
        pss = list(np.round(rng.uniform(800, 2600 if t % 2 else 1500, 12)))
        frames.append(jobs_frame(t, walls, pss, scouts=2, first_pandaid=100 * t))
    return build_workload(pd.concat(frames), tasks_frame([1, 2, 3, 4], [0, 1, 2, 3]), settings)


def test_a_memory_kill_is_priced_as_its_run_and_a_retry():
    settings = settings_with(memory_kill_factor=1.0, short_maxtime_s=None)
    work = build_workload(jobs_frame(1, [2.0], [3000.0]), tasks_frame([1]), settings)
    # 2,000 MB held, 3,000 needed: killed at 2/3 of its 2 h, retried at the ladder's 3,000
    run = replay(work, settings, ram=2000.0)
    cfg, alloc = settings.replay, AllocationSettings(prices=Prices(kill_overhead=1.0))
    priced = priced_total(run.result_, work, cfg, alloc, pool_cores(work, cfg))
    killed_h = 2.0 * 2000.0 / 3000.0
    assert priced["priced_components"]["kills"] == pytest.approx(killed_h + 1.0 * 2.0)
    assert set(priced["priced_components"]) == set(COMPONENTS)
    assert priced["priced_total_core_hours"] == pytest.approx(
        sum(priced["priced_components"].values())
    )


@pytest.mark.parametrize("factor", [0.6, 1.0, 1.5, 3.0])
def test_oracle_never_costs_more_than_a_hand_built_alternative(factor):
    settings = settings_with()
    work = _toy(settings)
    values = measured_values(work, settings)
    alternative = Submission.of({t: v * factor for t, v in values.items()})
    subs = {"oracle": oracle_submission(work, settings), "model": alternative}
    names = ["oracle", "predicted", "hybrid", "scouts"]
    results = run_strategies(work, settings.replay, settings, subs, names=names)
    cores = pool_cores(work, settings.replay)
    priced = {n: priced_total(r, work, settings.replay, PRICES, cores) for n, r in results.items()}
    oracle = priced["oracle"]
    # no kill, no slack, no memory used above its allocation, no wait
    for part in ("kills", "memory_slack", "walltime_slack", "memory_overuse", "scout_wait"):
        assert oracle["priced_components"][part] == pytest.approx(0.0, abs=1e-9), part
    for name in names[1:]:
        assert oracle["priced_total_core_hours"] <= priced[name]["priced_total_core_hours"], name
        for part, ours in oracle["priced_components"].items():  # every component bounds
            assert ours <= priced[name]["priced_components"][part] + 1e-9, (name, part)
    check = bounds(priced)
    assert check["all_met"] is True and len(check["rows"]) == 3
