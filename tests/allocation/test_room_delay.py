"""The wait a capped room (the long queue, HIMEM) adds to a task, against hand-worked
cases: the fluid delay itself, and the choice it moves (a task's own demand that brings a
walltime below the short queue's maxtime, a ramCount below the HIMEM border)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from scoutless.allocation.allocate import cost_allocation
from scoutless.allocation.context import JobContext
from scoutless.allocation.site import SiteRules, room_delay_hours
from scoutless.allocation.values import ValueDistribution
from scoutless.config import Prices

#: getJobMaxWalltime = cpuTime x 100 events / (1 core x 10 HS06 x 100 %): 10 s per HS06·s
QUEUES = SiteRules(memory_kill_factor=1.0, short_maxtime_s=86_400.0, max_maxtime_s=172_800.0)


def _job(n_jobs: float, wall_h: float = 20.0) -> JobContext:
    full = lambda v: np.full(1, float(v))  # noqa: E731
    return JobContext(
        cores=full(1), wall_s=full(wall_h * 3600), nevents=full(100), core_power=full(10),
        cpu_efficiency=full(100), base_walltime_s=full(0), n_jobs=full(n_jobs),
    )  # fmt: skip


def test_the_delay_is_the_drain_and_the_m_g_1_wait_over_the_pools():
    # a 20-core long queue half busy, whose tasks' drains have a mean residual of 10 h;
    # a 100-core pool half busy, residual 2 h. A job of 2 cores x 5 h of a 4-job task:
    # 10 core-h / 20 + 0.5 / (1 - 0.5) x 10 h / 4 = 3.0 h in the room,
    # 10 / 100 + 1 x 2 / 4 = 0.6 h in the pool: 2.4 h late
    rules = SiteRules(pool_cores=100.0, pool_load=0.5, pool_residual_h=2.0, long_cores=20.0,
                      long_load=0.5, long_residual_h=10.0)  # fmt: skip
    job = np.array([2.0]), np.array([5.0]), np.array([4.0])
    assert room_delay_hours(rules, "long", *job)[0] == pytest.approx(2.4)
    # no cap on HIMEM here: no wait for it; an idle cap as large as the pool: none
    assert room_delay_hours(rules, "himem", *job)[0] == 0.0
    roomy = dataclasses.replace(rules, long_cores=100.0, long_load=0.0)
    assert room_delay_hours(roomy, "long", *job)[0] == 0.0


def test_a_tasks_own_demand_on_a_small_long_queue_moves_its_walltime_below_the_short_maxtime():
    # cpuTime median 7,000 (a 19.4 h run), sigma 0.15: the short queue's maxtime (cpuTime
    # 8,640) is its 91st percentile. Without a cap on the long queue its premium
    # (0.25 x ~19.7 h ~ 4.9 core-h a job) is less than the kills a limit below 24 h risks
    # (8 % x (24 h + 3 x ~24 h) ~ 8 core-h): the limit goes above 24 h. A task of 200
    # such jobs on a 10-core long queue: each adds 19.7 h / 10 to its drain (1/100 of it
    # in the 100-core pool), ~1.8 h x 20 core-h an hour ~ 35 core-h a job, far above the
    # kills: the limit stays below 24 h, its kills within the cap
    prices = Prices(kill_overhead=3.0, walltime_slack_core_hour=0.05, long_queue_core_hour=0.25,
                    scout_delay_hour=20.0)  # fmt: skip
    dist = ValueDistribution.of(0.0, np.log([7000.0]), [0.15])
    uncapped = cost_allocation("cputime", dist, None, _job(200), QUEUES, prices,
                               max_kill_probability=0.25)  # fmt: skip
    assert uncapped.value[0] * 10 > 86_400
    small = dataclasses.replace(QUEUES, long_cores=10.0, pool_cores=100.0)
    capped = cost_allocation("cputime", dist, None, _job(200), small, prices,
                             max_kill_probability=0.25)  # fmt: skip
    assert capped.value[0] * 10 <= 86_400
    assert 0 < capped.kill_probability[0] <= 0.25
    # the same queue, ten times larger: the drain (1/100 - 1/100 of the pool's) is gone
    large = dataclasses.replace(small, long_cores=100.0)
    roomy = cost_allocation("cputime", dist, None, _job(200), large, prices,
                            max_kill_probability=0.25)  # fmt: skip
    assert roomy.value[0] * 10 > 86_400


def test_a_small_himem_cap_keeps_a_ramcount_below_the_border_where_the_cap_allows():
    # a task of 100 jobs whose value is 1,900 MB/core (sigma 0.05): the HIMEM border is
    # 2,000 / compensation. Kills cost 2 x the job; above the border a job pays the HIMEM
    # premium only, uncapped. On a 4-core HIMEM cap each job adds 20 h / 4 (over a
    # 200-core pool's 1/200) to the task's drain, 5 h x 20 = 100 core-h a job: below the
    # border, its kill share within a cap of 0.5
    border = 2000.0 / QUEUES.memory_compensation
    prices = Prices(kill_overhead=1.0, memory_gb_hour=0.25, himem_core_hour=0.5,
                    scout_delay_hour=20.0)  # fmt: skip
    dist = ValueDistribution.of(0.0, np.log([border * 0.97]), [0.05])
    free = cost_allocation("memory", dist, None, _job(100), QUEUES, prices,
                           max_kill_probability=0.5)  # fmt: skip
    assert free.value[0] > border
    small = dataclasses.replace(QUEUES, himem_cores=4.0, pool_cores=200.0)
    kept = cost_allocation("memory", dist, None, _job(100), small, prices,
                           max_kill_probability=0.5)  # fmt: skip
    assert kept.value[0] <= border * (1 + 1e-9)
    assert 0 < kept.kill_probability[0] <= 0.5
    # the kill cap is a constraint the delay never overrides: at 0.05, HIMEM it is
    capped = cost_allocation("memory", dist, None, _job(100), small, prices,
                             max_kill_probability=0.05)  # fmt: skip
    assert capped.value[0] > border
    assert math.isfinite(capped.expected_cost[0])
