"""The decision with a within-task spread, queue load and the kill cap, against hand-worked
cases; the cap holds on held-out tasks within its binomial spread."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from scoutless.allocation.allocate import cost_allocation
from scoutless.allocation.context import JobContext
from scoutless.allocation.site import SiteRules, congestion
from scoutless.allocation.values import ConformalLevels, JobSpread, ValueDistribution
from scoutless.config import AllocationSettings, Prices, ReplaySettings

#: grace 1 (none assumed), a standard slot far below every need: slack is all priced
TIGHT = SiteRules(memory_kill_factor=1.0, standard_mb_per_core=100.0)
#: getJobMaxWalltime = cpuTime x 100 events / (1 core x 10 HS06 x 100 %): 10 s per HS06·s
QUEUES = SiteRules(memory_kill_factor=1.0, short_maxtime_s=86_400.0, max_maxtime_s=172_800.0)


def _job(n: int = 1, wall_h: float = 20.0) -> JobContext:
    full = lambda v: np.full(n, float(v))  # noqa: E731
    return JobContext(
        cores=full(1), wall_s=full(wall_h * 3600), nevents=full(100), core_power=full(10),
        cpu_efficiency=full(100), base_walltime_s=full(0), n_jobs=full(10),
    )  # fmt: skip


#: one task of 1,000 MB/core known almost exactly
EXACT = ValueDistribution.of(0.0, np.log([1000.0]), [1e-3])
#: its jobs: a quarter each at 0.8, 0.9, 1.0 and 1.3 times the task's value
SPREAD = JobSpread.equal(np.array([[0.8, 0.9, 1.0, 1.3]]))


def test_a_spread_of_the_jobs_moves_the_choice_up():
    # a kill costs its run plus 5 x the job (20 core-h x 6 = 120), a GB-hour held 0.05:
    # covering the 1.3x job costs (1300 - need) / 1024 x 0.05 x 20 h <= 0.6 core-h a job,
    # far less than a quarter of the jobs killed (30 core-h): the choice is 1.3 x 1000
    prices = Prices(kill_overhead=5.0, memory_gb_hour=0.05, himem_core_hour=0.0)
    alone = cost_allocation("memory", EXACT, None, _job(), TIGHT, prices)
    spread = cost_allocation("memory", EXACT, None, _job(), TIGHT, prices, spread=SPREAD)
    assert alone.value[0] == pytest.approx(1000.0, rel=0.01)
    assert spread.value[0] == pytest.approx(1300.0, rel=0.01)
    assert spread.kill_probability[0] == 0.0


def test_the_kill_cap_binds_where_kills_are_cheap():
    # kills free (overhead 0, the run is all), a GB-hour 2 core-hours: unconstrained, the
    # cheapest is to allocate nothing and let every job die; the cap forbids it
    prices = Prices(kill_overhead=0.0, memory_gb_hour=2.0, himem_core_hour=0.0)
    free = cost_allocation("memory", EXACT, None, _job(), TIGHT, prices, spread=SPREAD)
    assert free.kill_probability[0] == pytest.approx(1.0)
    # 0.3 allows the 1.3x quarter to die: 1,000; 0.2 does not: 1,300
    for cap, value in ((0.3, 1000.0), (0.2, 1300.0)):
        capped = cost_allocation("memory", EXACT, None, _job(), TIGHT, prices, spread=SPREAD,
                                 max_kill_probability=cap)  # fmt: skip
        assert capped.value[0] == pytest.approx(value, rel=0.01)
        assert capped.kill_probability[0] <= cap


def test_a_loaded_long_queue_moves_the_walltime_below_the_short_queues_maxtime():
    # cpuTime median 7,000 (a 19.4 h run), sigma 0.15; the short queue ends at 86,400 s,
    # i.e. cpuTime 8,640, the 91st percentile. Free, the long queue's premium is
    # 0.25 x ~19.7 h ~ 4.9 core-h a job, less than the kills a limit below 24 h risks
    # (8 % x (24 h + 3 x ~24 h) ~ 8 core-h): the limit goes above 24 h. At load 0.9 the
    # premium is ten times that (49 core-h): the short queue's maxtime wins, its kills
    # within the cap
    prices = Prices(kill_overhead=3.0, walltime_slack_core_hour=0.05, long_queue_core_hour=0.25)
    dist = ValueDistribution.of(0.0, np.log([7000.0]), [0.15])
    assert congestion(0.9) == pytest.approx(10.0)
    free = cost_allocation("cputime", dist, None, _job(), QUEUES, prices,
                           max_kill_probability=0.25)  # fmt: skip
    loaded_rules = dataclasses.replace(QUEUES, long_load=0.9)
    loaded = cost_allocation("cputime", dist, None, _job(), loaded_rules, prices,
                             max_kill_probability=0.25)  # fmt: skip
    assert free.value[0] * 10 > 86_400
    assert loaded.value[0] * 10 <= 86_400
    assert 0 < loaded.kill_probability[0] <= 0.25


def test_only_a_guaranteed_grace_allows_allocations_below_the_need():
    rules = SiteRules.of(ReplaySettings())  # the pilot kills at 2 x
    deciding = rules.deciding(AllocationSettings())
    assert rules.memory_kill_factor == 2.0 and deciding.memory_kill_factor == 1.0
    # a wide task (sigma 0.5); slack dear, memory used above the allocation free: without
    # a grace, a 5 % cap means the 95th percentile (6,000 x e^0.82); with a guaranteed 2x
    # grace, half of it survives as well and holds less
    prices = Prices(kill_overhead=0.0, memory_gb_hour=2.0, memory_overuse_gb_hour=0.0,
                    himem_core_hour=0.0)  # fmt: skip
    wide = ValueDistribution.of(0.0, np.log([6000.0]), [0.5])
    cap = 0.05
    planned = cost_allocation("memory", wide, None, _job(), deciding, prices,
                              max_kill_probability=cap)  # fmt: skip
    assert planned.value[0] >= wide.quantile(0.94)[0]
    graced = rules.deciding(AllocationSettings(guaranteed_memory_grace=2.0))
    halved = cost_allocation("memory", wide, None, _job(), graced, prices,
                             max_kill_probability=cap)  # fmt: skip
    assert halved.value[0] <= planned.value[0] * 0.55
    assert halved.kill_probability[0] <= cap


def test_the_cap_holds_on_held_out_tasks_within_its_binomial_spread():
    # a model off by its location and too narrow; split-conformal levels from calibration
    # tasks; jobs spread log-normally around their task's value (0.3), the spread learnt
    # from a history's jobs. Kills cheap and slack dear: the cap is what binds.
    rng = np.random.default_rng(7)
    n, cap = 1500, 0.1
    prices = Prices(kill_overhead=0.0, memory_gb_hour=2.0, himem_core_hour=0.0)

    def tasks(k: int) -> tuple[ValueDistribution, np.ndarray]:
        mu = rng.normal(7.5, 0.5, k)
        true = np.exp(mu + 0.4 * rng.standard_normal(k))
        return ValueDistribution.of(0.0, mu + 0.1, 0.25), true

    calib_dist, calib_true = tasks(n)
    levels = ConformalLevels.fit(calib_dist, calib_true)
    history = np.exp(0.3 * rng.standard_normal(20_000))
    spread = JobSpread.pooled(history, np.zeros(20_000), np.zeros(n), points=8)
    dist, true = tasks(n)
    chosen = cost_allocation("memory", dist, levels, _job(n), TIGHT, prices, spread=spread,
                             max_kill_probability=cap)  # fmt: skip
    job_need = true * np.exp(0.3 * rng.standard_normal(n))  # one held-out job per task
    killed = float((job_need > chosen.value).mean())
    band = 3 * math.sqrt(cap * (1 - cap) / n)
    assert killed <= cap + band, killed
    assert killed >= cap - 3 * band, killed  # the cap binds: not far more than it asks
