"""The simulated PanDA site on hand-worked cases: priority order, HIMEM and long-queue caps,
JEDI's recalculations at 5 and 100 finished jobs, relative slack."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from replay_helpers import jobs_frame, replay, settings_with, tasks_frame

from scoutless.config import ResourceType
from scoutless.jedi.priorities import job_priority
from scoutless.replay.config import ReplayConfigError, ReplaySettings, replay_settings
from scoutless.replay.engine import Replay
from scoutless.replay.metrics import summary
from scoutless.replay.plan import StrategyPlan
from scoutless.replay.pool import PoolError, SlotPool, pool_cores
from scoutless.replay.workload import TaskEstimator, build_workload

H = 3600.0
TYPES = {
    "SCORE": ResourceType(mb_per_core=2000, multicore=False),
    "MCORE": ResourceType(mb_per_core=2000, multicore=True),
    "SCORE_HIMEM": ResourceType(mb_per_core=3000, multicore=False),
    "MCORE_HIMEM": ResourceType(mb_per_core=3000, multicore=True),
}


def _pool(**cores: int) -> SlotPool:
    sizes = {"SCORE": 1, "MCORE": 8, "SCORE_HIMEM": 1, "MCORE_HIMEM": 8, **cores}
    return SlotPool(TYPES, {k.replace("__", "."): v for k, v in sizes.items()})


def test_jobgenerator_boosts_scouts_to_at_least_901():
    assert [job_priority(p, True) for p in (0, 500, 900, 950)] == [901, 901, 901, 951]
    assert job_priority(500, False) == 500


def test_a_freed_core_goes_to_the_highest_priority_then_the_oldest():
    pool = _pool()
    assert [u for u, _, _ in pool.enqueue(0, 1, 1000, 500)] == [0]  # the core was free
    for unit, priority in ((1, 500), (2, 900), (3, 500), (4, 901)):
        assert pool.enqueue(unit, 1, 1000, priority) == []
    order = []
    running = 0
    for _ in range(4):
        (started,) = pool.release(running, 1)
        running = started[0]
        order.append(running)
    # hand-worked: 901 (scout), 900, then the two 500s in the order they queued
    assert order == [4, 2, 1, 3]


def test_a_later_high_priority_task_overtakes_a_queued_low_one():
    settings = settings_with(resource_types={"SCORE": {"cores": 1}})
    jobs = pd.concat(
        [jobs_frame(1, [1.0] * 3, [500] * 3), jobs_frame(2, [1.0], [500], first_pandaid=100)],
        ignore_index=True,
    )
    tasks = tasks_frame([1, 2], submit_h=[0.0, 0.5]).assign(currentpriority=[300, 900])
    work = build_workload(jobs, tasks, settings)
    result = replay(work, settings, ram=2000).result_
    # task 1's first job holds the core 0-1 h; task 2 (900) runs 1-2 h, then task 1's others
    assert result.completion_s[1] == pytest.approx(2 * H - 1800)
    assert result.completion_s[0] == pytest.approx(4 * H)
    fifo = replay(build_workload(jobs, tasks.drop(columns="currentpriority"), settings),
                  settings, ram=2000).result_  # fmt: skip
    assert fifo.completion_s[1] == pytest.approx(4 * H - 1800)  # without priorities: last


def test_a_himem_share_outside_0_1_names_its_key():
    for bad in (-0.1, 1.5):
        with pytest.raises(ReplayConfigError, match=r"replay\.himem_share") as err:
            replay_settings(ReplaySettings(), himem_share=bad)
        assert "1 more" not in str(err.value)


def test_himem_gets_its_share_of_the_pool_unless_configured():
    types = {"SCORE": {"cores": 10}, "MCORE": {"cores": 16}, "MCORE_HIMEM": {"cores": 7}}
    settings = settings_with(resource_types=types, himem_share=0.25)
    work = build_workload(jobs_frame(1, [1.0], [500]), tasks_frame([1]), settings)
    cores = pool_cores(work, settings.replay)
    assert cores["SCORE"] == 10 and cores["SCORE_HIMEM"] == 3  # ceil(0.25 x 10)
    assert cores["MCORE_HIMEM"] == 7  # configured: wins over the share (4)
    assert cores["SCORE.long"] == 5  # long_queue_share 0.5


def test_himem_jobs_wait_for_their_cap_while_standard_ones_run():
    pool = _pool(SCORE=3, SCORE_HIMEM=1)
    assert [u for u, _, _ in pool.enqueue(0, 1, 2500, 500)] == [0]  # HIMEM, cap 1
    assert pool.enqueue(1, 1, 2500, 900) == []  # HIMEM again: capped, though cores are free
    assert [u for u, _, _ in pool.enqueue(2, 1, 1000, 100)] == [2]  # standard: runs
    assert [(u, mb) for u, mb, _ in pool.release(0, 1)] == [(1, 3000.0)]


def test_a_zero_himem_share_refuses_a_job_that_needs_himem_naming_the_key():
    pool = _pool(SCORE_HIMEM=0)
    with pytest.raises(PoolError, match=r"replay\.himem_share"):
        pool.enqueue(0, 1, 2500, 500)


def test_a_job_over_the_short_maxtime_waits_for_the_long_queue():
    # SCORE: 2 cores, the long queue 1 of them; cpuTime 72 HS06 s/event → limit 2 h > 1 h
    settings = settings_with(
        resource_types={"SCORE": {"cores": 2}}, short_maxtime_s=H, long_queue_share=0.5
    )
    work = build_workload(jobs_frame(1, [1.5, 1.5], [500, 500]), tasks_frame([1]), settings)
    long = replay(work, settings, ram=2000, cputime=72.0).result_
    assert long.completion_s[0] == pytest.approx(3 * H)  # one after the other
    assert long.info["SCORE.long_jobs_started"] == 2 and long.walltime_kills[0] == 0
    one_queue = settings_with(resource_types={"SCORE": {"cores": 2}}, short_maxtime_s=None)
    assert replay(work, one_queue, ram=2000, cputime=72.0).result_.completion_s[0] == 1.5 * H


def test_a_short_job_uses_a_core_the_long_queue_may_not():
    pool = _pool(SCORE=2, SCORE__long=1)
    assert [u for u, _, _ in pool.enqueue(0, 1, 1000, 500, long=True)] == [0]
    assert pool.enqueue(1, 1, 1000, 900, long=True) == []  # long queue full
    assert [(u, on_long) for u, _, on_long in pool.enqueue(2, 1, 1000, 100)] == [(2, False)]


def test_a_walltime_kill_retries_on_the_long_queue():
    # cpuTime 30 HS06 s/event → limit 3000 s ≤ 1 h: queued short, killed at 3000 s;
    # increase_cputime gives the retry the long queue's maxtime, so it needs the long queue
    settings = settings_with(resource_types={"SCORE": {"cores": 2}}, short_maxtime_s=H)
    work = build_workload(jobs_frame(1, [1.5], [500]), tasks_frame([1]), settings)
    result = replay(work, settings, ram=2000, cputime=30.0).result_
    assert result.walltime_kills[0] == 1 and result.attempts[0] == 2
    assert result.info["SCORE.long_jobs_started"] == 1
    assert result.completion_s[0] == pytest.approx(3000 + 1.5 * H)


def test_a_kill_at_the_short_queues_maxtime_is_told_apart():
    """Wasted core-hours at the short queue's maxtime: a limit the queue chosen at release
    cut, not one the job's own cpuTime set below it."""
    settings = settings_with(resource_types={"SCORE": {"cores": 2}}, short_maxtime_s=H)
    work = build_workload(jobs_frame(1, [1.5], [500]), tasks_frame([1]), settings)
    tasks = np.ones(1, dtype=bool)
    for cputime, at_maxtime in ((30.0, 0.0), (36.0, 1.0)):  # limits 3000 s, then 1 h
        figures = summary(replay(work, settings, ram=2000, cputime=cputime).result_, work, tasks)
        assert figures["walltime_kills"] == 1
        assert figures["wasted_core_hours_short_maxtime"] == pytest.approx(at_maxtime)


class _Recording(TaskEstimator):
    def __init__(self, *args) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args)
        self.calls: list[int] = []

    def __call__(self, units):  # type: ignore[no-untyped-def]
        self.calls.append(len(units))
        return super().__call__(units)


def test_jedi_recalculates_a_task_at_its_5th_and_100th_finished_job():
    settings = settings_with(resource_types={"SCORE": {"cores": 1}})
    work = build_workload(jobs_frame(1, [1.0] * 120, [500] * 120), tasks_frame([1]), settings)
    plan = StrategyPlan("t", np.array([2000.0]), np.array([np.nan]), False, True)
    cfg = settings.replay
    estimator = _Recording(work, settings)
    Replay(work, plan, cfg, SlotPool(cfg.resource_types, pool_cores(work, cfg)), estimator).run()
    assert estimator.calls == [5, 100]  # propagateResultToJEDI: nDoneJobs in [5, 100]


def test_relative_slack_is_time_weighted_limit_minus_usage_over_limit():
    settings = settings_with()
    # job A: 1 h, 500 MB of a 2000 MB slot; job B: 3 h, 1500 MB. Limit 4 h each (cpuTime 144)
    work = build_workload(jobs_frame(1, [1.0, 3.0], [500, 1500]), tasks_frame([1]), settings)
    result = replay(work, settings, ram=2000, cputime=144.0).result_
    got = summary(result, work, np.ones(1, dtype=bool))
    assert got["memory_slack_relative"] == pytest.approx((1 * 0.75 + 3 * 0.25) / 4)
    assert got["walltime_slack_relative"] == pytest.approx((1 * 0.75 + 3 * 0.25) / 4)
    assert got["walltime_slack_core_hours"] == pytest.approx(3.0 + 1.0)
    assert got["memory_slack_gb_hours"] == pytest.approx((1500 * 1 + 500 * 3) / 1024)


def test_the_generator_writes_pandas_priority_columns_and_the_workload_reads_them():
    from scoutless.history.synthetic.writer import generate_chunk

    frames = generate_chunk(40, seed=3)
    tasks, jobs = frames.tasks, frames.jobs
    assert {"taskpriority", "currentpriority"} <= set(tasks.columns)
    assert {"assignedpriority", "currentpriority"} <= set(jobs.columns)
    task_priority = tasks.set_index("jeditaskid")["currentpriority"]
    expected = task_priority.reindex(jobs["jeditaskid"]).to_numpy()
    scout = jobs["specialhandling"].eq("sj").to_numpy()
    assert np.array_equal(
        jobs["assignedpriority"], np.where(scout, np.maximum(901, expected + 1), expected)
    )
    assert np.array_equal(jobs["currentpriority"], jobs["assignedpriority"])
    user = tasks["prodsourcelabel"].eq("user")
    assert (tasks.loc[user, "currentpriority"] == 1000).all()
    work = build_workload(jobs, tasks, settings_with())
    assert np.array_equal(work.task_priority, task_priority.reindex(work.task_ids).to_numpy())
    # a scout unit keeps its task's priority: the replay boosts whichever units it scouts with
    assert np.array_equal(work.unit_priority, work.task_priority[work.task])


def test_scouts_and_jobs_without_cputime_need_a_day_at_10_hs06_a_core():
    from scoutless.replay.rules import needs_long_queue

    day = 86400.0
    # (maxtime - baseWalltime) x corePower x cpuEfficiency against 24 h x 10 HS06
    assert not needs_long_queue(3600.0, day, True, 10.0, 100.0, 0.0)
    assert needs_long_queue(3600.0, day, True, 11.0, 90.0, 600.0)  # 849,420 < 864,000
    assert needs_long_queue(float("inf"), day, False, 11.0, 90.0, 600.0)
    assert not needs_long_queue(3600.0, day, False, 11.0, 90.0, 600.0)  # a limit that fits
    assert needs_long_queue(day + 1, day, False, 20.0, 100.0, 0.0)


def test_a_ramcount_just_over_2000_stays_in_a_standard_slot():
    # ResourceSpec.match_job: 0.9 x (2200 x 1 + 0) / 1 = 1980 ≤ 2000: SCORE; 2300 → 2070: HIMEM
    settings = settings_with()
    work = build_workload(jobs_frame(1, [1.0], [500]), tasks_frame([1]), settings)
    assert replay(work, settings, ram=2200).result_.info["SCORE.jobs_started"] == 1
    assert replay(work, settings, ram=2300).result_.info["SCORE_HIMEM.jobs_started"] == 1


def test_the_best_job_waits_for_its_cores_and_nothing_behind_it_backfills():
    pool = _pool(MCORE=8, MCORE_HIMEM=8)
    assert [u for u, _, _ in pool.enqueue(0, 4, 1000, 500)] == [0]  # 4 of 8 cores busy
    assert pool.enqueue(1, 8, 1000, 900) == []  # the best: needs all 8
    assert pool.enqueue(2, 4, 2500, 500) == []  # HIMEM, would fit the free 4: waits
    assert [u for u, _, _ in pool.release(0, 4)] == [1]
    assert [u for u, _, _ in pool.release(1, 8)] == [2]


def test_the_cost_model_reads_the_replays_queues():
    from scoutless.allocation.site import SiteRules

    cfg = replay_settings(ReplaySettings(), short_maxtime_s=43200.0, queue_maxtime_s=259200.0)
    rules = SiteRules.of(cfg)
    assert (rules.short_maxtime_s, rules.max_maxtime_s) == (43200.0, 259200.0)
    assert SiteRules.of(ReplaySettings()).short_maxtime_s == ReplaySettings().short_maxtime_s
