"""The replay's clock on hand-worked tasks: avalanche, kills, ladder, task raise, exits."""

from __future__ import annotations

import numpy as np
import pytest
from replay_helpers import jobs_frame, replay, settings_with, tasks_frame

from scoutless.replay.result import BROKEN, EXHAUSTED, RUNNING
from scoutless.replay.workload import build_workload

H = 3600.0


def test_production_starts_at_the_first_check_after_the_5th_scout():
    settings = settings_with()
    walls = [i + 1 + 100 / H for i in range(10)] + [1.0] * 5  # 5th scout ends at 5 h + 100 s
    work = build_workload(jobs_frame(1, walls, [500] * 15, scouts=10), tasks_frame([1]), settings)
    run = replay(work, settings, ram=2000, scouts=True, retune=True)
    # JEDI checks every 600 s: the first check after 18,100 s is at 18,600 s
    assert run.result_.first_production_s[0] == 18600.0
    assert run.result_.completion_s[0] == pytest.approx(max(10 * H + 100, 18600 + H))
    assert run.result_.scout_ram[0] == pytest.approx(500 * 1.10)  # from the 5 finished scouts


def test_no_scouts_releases_everything_at_submission():
    settings = settings_with()
    work = build_workload(
        jobs_frame(1, [1.0] * 12, [500] * 12, scouts=10), tasks_frame([1]), settings
    )
    result = replay(work, settings, ram=2000).result_
    assert result.first_production_s[0] == 0.0
    assert result.completion_s[0] == pytest.approx(H)


def test_memory_kills_climb_the_ladder_until_the_job_fits():
    settings = settings_with()
    work = build_workload(jobs_frame(1, [1.0], [5000]), tasks_frame([1]), settings)
    result = replay(work, settings, ram=1000).result_
    # 1000 → SCORE slot 2000 MB, killed above 4000; retry at 2000: same; retry at 3000: HIMEM
    # slot 3000, limit 6000 > 5000: finishes. Each kill at 1 h × 4000/5000.
    assert result.attempts[0] == 3 and result.memory_kills[0] == 2
    assert not result.first_ok[0]
    assert result.wasted_core_s[0] == pytest.approx(2 * 0.8 * H)
    assert result.used_core_s[0] == pytest.approx(2 * 0.8 * H + H)


@pytest.mark.parametrize(("factor", "attempts"), [(2.0, 1), (1.0, 3)])
def test_1_9_times_the_allocation_runs_at_k2_and_is_killed_at_k1(factor, attempts):
    settings = settings_with(memory_kill_factor=factor)
    work = build_workload(jobs_frame(1, [1.0], [1.9 * 2000]), tasks_frame([1]), settings)
    result = replay(work, settings, ram=2000).result_
    assert result.attempts[0] == attempts  # k = 1: 2000 → 3000 (killed) → 4000 fits


@pytest.mark.parametrize(("n_big", "task_ram"), [(3, 1000.0), (4, 3000.0)])
def test_the_task_is_raised_once_more_than_30_percent_of_its_jobs_needed_it(n_big, task_ram):
    # 4 of 10 jobs climb 1000 → 2000 → 3000: past 30 %, the task follows each step
    settings = settings_with()
    pss = [5000] * n_big + [500] * (10 - n_big)
    work = build_workload(jobs_frame(1, [1.0] * 10, pss), tasks_frame([1]), settings)
    assert replay(work, settings, ram=1000).task_ram[0] == task_ram


def test_scouts_far_above_4gb_exhaust_a_task_that_asked_for_less():
    settings = settings_with()
    pss = [4500] * 10 + [4500] * 25
    work = build_workload(jobs_frame(1, [1.0] * 35, pss, scouts=10), tasks_frame([1]), settings)
    result = replay(work, settings, ram=2000, scouts=True, retune=True).result_
    assert result.status[0] == EXHAUSTED
    assert np.isnan(result.completion_s[0]) and np.isnan(result.first_production_s[0])
    assert result.failed.sum() == 25  # the production jobs never ran
    resumed = settings_with(exhausted_resume_after_s=86400.0)
    again = replay(work, resumed, ram=2000, scouts=True, retune=True).result_
    assert again.status[0] == RUNNING and np.isfinite(again.completion_s[0])


def test_a_task_whose_scouts_all_fail_is_broken():
    settings = settings_with()
    work = build_workload(
        jobs_frame(1, [1.0] * 12, [20000] * 12, scouts=10), tasks_frame([1]), settings
    )
    result = replay(work, settings, ram=2000, scouts=True, retune=True).result_
    assert result.status[0] == BROKEN
    assert result.attempts[:10].tolist() == [settings.replay.max_attempts] * 10
    assert result.attempts[10:].tolist() == [0, 0]


def test_every_strategy_does_all_the_work_and_queues_when_slots_are_few():
    settings = settings_with(resource_types={"SCORE": {"cores": 2}})
    jobs = jobs_frame(1, [1.0] * 6, [500] * 6)
    result = replay(build_workload(jobs, tasks_frame([1]), settings), settings, ram=2000).result_
    assert result.used_core_s[0] == pytest.approx(6 * H)
    assert result.completion_s[0] == pytest.approx(3 * H)  # 2 slots, 3 waves


def test_the_hybrid_does_not_lower_cputime_from_its_short_first_jobs():
    settings = settings_with(resource_types={"SCORE": {"cores": 5}})
    # 5 short jobs finish first and would lower cpuTime below what the long ones need
    walls = [0.5] * 5 + [2.0] * 10
    work = build_workload(jobs_frame(1, walls, [500] * 15), tasks_frame([1]), settings)
    cputime = 2.5 * H * 10 / 1000  # HS06·s/event that fits 2.5 h
    lowering = replay(work, settings, ram=2000, cputime=cputime, retune=True, lowers=True)
    keeping = replay(work, settings, ram=2000, cputime=cputime, retune=True, lowers=False)
    assert lowering.result_.walltime_kills[0] > 0
    assert keeping.result_.walltime_kills[0] == 0


def test_strategies_in_parallel_processes_give_the_same_replay():
    from scoutless.replay.runner import run_strategies
    from scoutless.replay.submission import Submission

    settings = settings_with(resource_types={"SCORE": {"cores": 3}})
    jobs = jobs_frame(
        1, [1.0 + i / 10 for i in range(14)], [900 + 300 * i for i in range(14)], scouts=10
    )
    work = build_workload(jobs, tasks_frame([1]), settings)
    predicted = {"model": Submission.of({"memory": [1500.0], "cputime": [np.nan]})}
    names = ["scouts", "predicted", "hybrid"]
    serial = run_strategies(work, settings.replay, settings, predicted, names=names)
    parallel_cfg = settings.replay.model_copy(update={"workers": 2})
    parallel = run_strategies(work, parallel_cfg, settings, predicted, names=names)
    for name, result in serial.items():
        assert np.array_equal(result.attempts, parallel[name].attempts)
        assert np.array_equal(result.completion_s, parallel[name].completion_s, equal_nan=True)
