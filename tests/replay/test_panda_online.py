"""The history replay's ``online`` strategy on hand-worked tasks: a retry from the
conditional distribution, a posterior that follows kills and successes, walltime kills as
lower bounds, JEDI's raise never lowered, and the leakage guard beside the hybrid."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from replay_helpers import ValuePredictor, features_of, jobs_frame, settings_with, tasks_frame

from scoutless.allocation.values import ValueDistribution
from scoutless.replay.engine import Replay
from scoutless.replay.panda_online import PandaOnline
from scoutless.replay.plan import StrategyPlan
from scoutless.replay.pool import SlotPool, pool_cores
from scoutless.replay.runner import replay_document, run_strategies
from scoutless.replay.submission import model_submission, oracle_submission
from scoutless.replay.workload import TaskEstimator, build_workload
from scoutless.sizing.protocol import Outcome

H = 3600.0
#: a one-hour job of jobs_frame (1,000 events, corePower 10, one core, 100 %): HS06·s/event
ONE_HOUR_CPU = H * 10 / 1000


def _online(prior_mb: list[float], prior_cpu: list[float] | None = None,
            maxtime: float | None = None, **sizing: object):  # fmt: skip
    """The sizer of one task of four one-hour, 1,000 MB jobs, started from the prior;
    ``maxtime``: the long queue's (default: the longest job's, an hour)."""
    settings = settings_with(queue_maxtime_s=maxtime)
    settings = settings.model_copy(update={"sizing": settings.sizing.model_copy(update=sizing)})
    work = build_workload(jobs_frame(1, [1.0] * 4, [1000] * 4), tasks_frame([1]), settings)
    cpu = prior_cpu or [ONE_HOUR_CPU] * 10
    return PandaOnline(work, settings, {"memory": np.array([prior_mb]),
                                        "cputime": np.array([cpu])})  # fmt: skip


def test_a_retry_is_the_plan_on_the_need_above_what_killed_it():
    # no smoothing: the need's sample is the prior's 10 jobs about their mean log, each
    # residual leave-one-out (× 10/9): 1000 and 5200 MB become 5200 / 5.2^(1/18) and
    # 5200 × 5.2^(1/18) = 5,699 MB. A kill at 4,000 MB leaves only the upper five.
    sizer = _online([1000.0] * 5 + [5200.0] * 5, kernel_nodes=1)
    assert sizer.retry(0, 0, 4000.0) == pytest.approx(5200 * 5.2 ** (1 / 18))
    # the ladder would have gone to 6000 MB from a 4000 MB job; the sizer's need says less


def test_the_posterior_rises_after_kills_and_falls_after_successes_far_below():
    sizer = _online([2000.0] * 10)
    prior = sizer.first(0, 0)
    assert prior == pytest.approx(2000.0)
    for unit in range(10):  # killed at twice a 2,000 MB allocation: the need lies above
        sizer.learn(0, unit % 4, Outcome(4000.0, 0.5 * H, True))
    raised = sizer.first(0, 0)
    assert raised > 1.5 * prior
    for unit in range(40):  # then jobs that used a quarter of it: it comes down again
        sizer.learn(0, unit % 4, Outcome(500.0, H, False))
    assert sizer.first(0, 0) < prior
    assert sizer.summary()["memory_bounds"] == 10
    fresh = _online([2000.0] * 10)
    for unit in range(20):  # no kill, every job far below the prior
        fresh.learn(0, unit % 4, Outcome(500.0, H, False))
    assert fresh.first(0, 0) < 0.6 * prior  # the prior still weighs 10 jobs of 30


def test_walltime_kills_are_lower_bounds_on_the_run_and_teach_no_memory():
    sizer = _online([2000.0] * 10)
    memory = sizer.first(0, 0)
    assert [sizer.walltime(0, unit) for unit in range(4)] == pytest.approx([H] * 4)  # started
    for unit in (1, 2, 3):  # killed at a two-hour limit; the first to start still runs
        sizer.learn(0, unit, Outcome(math.nan, 2 * H, True))
    assert sizer.summary()["walltime_bounds"] == 0  # learnt in start order: they wait
    sizer.learn(0, 0, Outcome(math.nan, 2 * H, True))
    assert sizer.summary()["walltime_bounds"] == 4
    # 4 of 14 above an hour: more than the walltime's kill cap allows at one hour
    assert sizer.walltime(0, 0) >= 2 * H
    assert sizer.first(0, 0) == memory


def test_a_walltime_kill_is_priced_with_the_retry_jedi_makes_at_the_queue_maxtime():
    """JEDI retries a job killed at its walltime at the queue's maxtime, not where the
    sizer's plan would: the kill's price carries that retry's limit above the need, so a
    long queue's maxtime makes the first limit a safer one. Nine one-hour jobs and a
    five-hour one: with the retry an hour away the plan risks the kill (a 10 % chance),
    with it 48 hours away it covers the five hours."""
    prior = [ONE_HOUR_CPU] * 9 + [5 * ONE_HOUR_CPU]
    near = _online([2000.0] * 10, prior, maxtime=H, kernel_nodes=1)
    far = _online([2000.0] * 10, prior, maxtime=48 * H, kernel_nodes=1)
    # the retry's limit, 48 h less baseWalltime, in HS06·s per event (an hour: ONE_HOUR_CPU)
    assert far.retry_cpu[0] == pytest.approx((48 * H - far.base_wall[0]) / H * ONE_HOUR_CPU)
    assert near.retry_cpu[0] == pytest.approx((H - near.base_wall[0]) / H * ONE_HOUR_CPU)
    assert near.walltime(0, 0) < 1.1 * H
    assert far.walltime(0, 0) > 5 * H


class Recorder:
    """A UnitSizer that answers a fixed ramCount and records what it learns."""

    def __init__(self, ram: float = math.nan) -> None:
        self.ram, self.learnt = ram, []

    def first(self, task: int, unit: int) -> float:
        return self.ram

    def walltime(self, task: int, unit: int) -> float:
        return math.nan

    def retry(self, task: int, unit: int, failed: float) -> float:
        return math.nan

    def learn(self, task: int, unit: int, outcome: Outcome) -> None:
        self.learnt.append(outcome)

    def summary(self) -> dict[str, float]:
        return {}


def _replay(work, settings, sizer, *, ram: float, cputime: float = math.nan) -> Replay:
    plan = StrategyPlan("online", np.full(work.n_tasks, ram), np.full(work.n_tasks, cputime),
                        False, True, sizer=sizer, sizes_at_start=True)  # fmt: skip
    cfg = settings.replay
    return Replay(work, plan, cfg, SlotPool(cfg.resource_types, pool_cores(work, cfg)),
                  TaskEstimator(work, settings))  # fmt: skip


def test_the_engine_hands_a_walltime_kill_to_the_sizer_as_a_bound_on_the_run():
    settings = settings_with()
    work = build_workload(jobs_frame(1, [1.0], [1000]), tasks_frame([1]), settings)
    sizer = Recorder()
    # cpuTime 18: a limit of 18 × 1000 / 10 = 1,800 s for a one-hour job
    result = _replay(work, settings, sizer, ram=2000, cputime=ONE_HOUR_CPU / 2).run()
    assert result.walltime_kills[0] == 1 and result.attempts[0] == 2
    killed, done = sizer.learnt
    assert math.isnan(killed.need) and killed.censored and killed.runtime == pytest.approx(H / 2)
    assert done == Outcome(1000.0, H, False)


def test_the_sizer_never_lowers_a_ramcount_jedi_raised():
    settings = settings_with()
    work = build_workload(jobs_frame(1, [1.0] * 2, [1000] * 2), tasks_frame([1]), settings)
    run = _replay(work, settings, Recorder(ram=800.0), ram=2000)
    run.task_ram[0] = 4000.0  # JEDI raised the task (re-tuning, or the 30 % rule)
    run.size_first(0, 0)
    assert run.job_ram[0] == 4000.0
    run.task_ram[0] = 1500.0  # JEDI lowered it below the submission: the sizer's own
    run.size_first(1, 0)
    assert run.job_ram[1] == 800.0


def test_online_beside_the_hybrid_and_the_oracle_with_the_leakage_guard():
    settings = settings_with()
    jobs = pd.concat([jobs_frame(t, [2.0] * 20, [1200 + 400 * (i % 3) for i in range(20)],
                                 first_pandaid=100 * t) for t in (1, 2)])  # fmt: skip
    work = build_workload(jobs, tasks_frame([1, 2]), settings)
    dists = {
        "memory": ValueDistribution.of(0, np.log([800.0, 3000.0]), 0.3),  # low, high
        "cputime": ValueDistribution.of(0, np.log([2 * ONE_HOUR_CPU] * 2), 0.3),
        "walltime": ValueDistribution.of(0, np.log([2 * H] * 2), 0.3),
    }
    predictor = ValuePredictor(dists, [1, 2])
    subs = {
        "model": model_submission(predictor, features_of([1, 2]), work, settings,
                                  policy="cost", alpha=0.05),
        "oracle": oracle_submission(work, settings),
    }  # fmt: skip
    assert subs["model"].job_priors["memory"].shape == (2, 10)
    names = ["hybrid", "online", "oracle"]
    results = run_strategies(work, settings.replay, settings, subs, names=names)
    online = results["online"]
    assert not online.failed.any() and online.sizing["learnt"] == online.attempts.sum()
    document = replay_document(results, work, {}, settings.replay, {})
    entry = document["strategies"]["online"]
    assert {"jobs_memory_killed_twice", "attempts_per_fitted_job",
            "failed_attempts_gb_hours", "sizing"} <= set(entry)  # fmt: skip
    assert document["strategies"]["oracle"]["failed_attempts_gb_hours"] == 0.0
    guard = [r for r in document["checks"]["bounds"]["rows"] if r["goal"] == "oracle ≤ online"]
    assert len(guard) == 1 and guard[0]["met"]
    goals = {r["goal"]: r for r in document["checks"]["online_vs_hybrid"]["rows"]}
    kills = goals["online ≤ 0.5 × hybrid"]  # the first hybrid goal: memory kills
    assert kills["metric"] == "memory kills" and kills["figures"]["online"] == entry["memory_kills"]
