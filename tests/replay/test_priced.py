"""The priced total: its components by hand, and oracle (each job its own need) never
dearer than a hand-built alternative on a toy pool."""

from __future__ import annotations

import dataclasses

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


def test_a_wait_in_a_capped_room_is_priced_as_the_tasks_delay():
    # SCORE: 2 cores, the long queue 1 of them; cpuTime 72 HS06 s/event → limit 2 h > 1 h:
    # two 0.5 h jobs on the long queue, the second waits 0.5 h (none waits in the pool)
    settings = settings_with(resource_types={"SCORE": {"cores": 2}}, short_maxtime_s=3600.0,
                             long_queue_share=0.5)  # fmt: skip
    work = build_workload(jobs_frame(1, [0.5, 0.5], [500, 500]), tasks_frame([1]), settings)
    result = replay(work, settings, ram=2000, cputime=72.0).result_
    assert result.room_delay_s[0] == pytest.approx(0.5 * 3600)
    alloc = AllocationSettings(prices=Prices(scout_delay_hour=20.0))
    priced = priced_total(result, work, settings.replay, alloc, pool_cores(work, settings.replay))
    assert priced["priced_components"]["room_delay"] == pytest.approx(20.0 * 0.5)
    # a limit within the short queue (50 min): both run at once, no delay
    short = replay(work, settings, ram=2000, cputime=30.0).result_
    assert short.room_delay_s[0] == 0.0


def test_the_loads_a_choice_puts_on_the_caps():
    from scoutless.allocation.allocate import Allocation
    from scoutless.allocation.context import JobContext
    from scoutless.allocation.site import SiteRules
    from scoutless.replay.site_rules import chosen_loads, with_loads

    settings = settings_with(resource_types={"SCORE": {"cores": 4}})
    # two single-core tasks submitted 0 and 9 h apart, 1 h jobs: a span of 10 h
    work = build_workload(pd.concat([jobs_frame(1, [1.0], [500]), jobs_frame(2, [1.0], [500],
                          first_pandaid=9)]), tasks_frame([1, 2], [0.0, 9.0]), settings)  # fmt: skip
    job = JobContext(cores=np.ones(2), wall_s=np.full(2, 7200.0), nevents=np.full(2, 100.0),
                     core_power=np.full(2, 10.0), cpu_efficiency=np.full(2, 100.0),
                     base_walltime_s=np.zeros(2), n_jobs=np.array([5.0, 10.0]))  # fmt: skip
    rules = SiteRules(short_maxtime_s=86_400.0, long_cores=4.0, himem_cores=2.0)
    nan = np.full(2, np.nan)
    # task 1: ramCount above the border (all 5 jobs x 2 h in HIMEM); task 2: below it, a
    # tenth of its jobs planned killed (retried in HIMEM: 1 job x 2 h). cpuTime: task 2's
    # limit (10,000 x 10 s = 27.8 h) above the short maxtime: its 10 x 2 h on the long queue
    memory = Allocation(np.array([3000.0, 1000.0]), nan, nan, nan, np.array([0.0, 0.1]))
    cputime = Allocation(np.array([100.0, 10_000.0]), nan, nan, nan, np.zeros(2))
    span_h = (9.0 * 3600 + 3600) / 3600
    loads = chosen_loads({"memory": memory, "cputime": cputime}, job, {False: rules}, work)
    assert loads[False]["himem_load"] == pytest.approx((10.0 + 2.0) / (2.0 * span_h))
    assert loads[False]["long_load"] == pytest.approx(20.0 / (4.0 * span_h))
    # drains through HIMEM's 2 cores: 10 / 2 = 5 h and 2 / 2 = 1 h: E[S²] / 2 E[S] = 26 / 12
    assert loads[False]["himem_residual_h"] == pytest.approx(26.0 / 12.0)
    # a damped step from the needs' loads, never below them
    floor = {False: dataclasses.replace(rules, himem_load=0.5, long_load=0.1)}
    stepped = with_loads(floor, loads, floor)[False]
    assert stepped.himem_load == pytest.approx(max(0.5, (0.5 + 12.0 / (2 * span_h)) / 2))
    assert stepped.long_load == pytest.approx((0.1 + 20.0 / (4 * span_h)) / 2)
