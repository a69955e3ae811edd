"""The canary's arm (``replay.canary_arm``) on hand-built tasks: ``control`` runs the
canary's tasks exactly as the control arm (an A/A rehearsal: task for task the scouts
strategy's replay), ``online`` sizes the canary's tasks, and only them, with the online
strategy's sizer (at share 1 the online strategy itself, task for task)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from replay_helpers import ValuePredictor, features_of, jobs_frame, settings_with, tasks_frame

from scoutless.allocation.values import ValueDistribution
from scoutless.config import ReplaySettings
from scoutless.replay.canary import Rehearsal
from scoutless.replay.runner import run_plans
from scoutless.replay.strategies import make_plans
from scoutless.replay.submission import model_submission
from scoutless.replay.workload import build_workload

H = 3600.0
TASKS = list(range(1, 9))
#: per task, the jobs' maxPSS (MB) about which the prediction is low or high
PSS = [1200.0, 5200.0, 1800.0, 6400.0, 1500.0, 4600.0, 3000.0, 1000.0]
PER_TASK = ("attempts", "memory_kills", "walltime_kills", "wasted_core_s", "completion_s",
            "first_production_s", "final_ram", "first_ok")  # fmt: skip


@pytest.fixture(scope="module")
def world():  # type: ignore[no-untyped-def]
    settings = settings_with()
    jobs = pd.concat([jobs_frame(t, [1.0 + 0.25 * (i % 4) for i in range(12)],
                                 [PSS[t - 1] * (0.8 + 0.1 * (i % 5)) for i in range(12)],
                                 scouts=3, first_pandaid=100 * t) for t in TASKS])  # fmt: skip
    work = build_workload(jobs, tasks_frame(TASKS), settings)
    guess = np.log([2000.0, 2000.0, 2000.0, 2500.0, 1200.0, 1800.0, 2000.0, 900.0])
    dists = {
        "memory": ValueDistribution.of(0, guess, 0.4),
        "cputime": ValueDistribution.of(0, np.log([2 * 36.0] * len(TASKS)), 0.3),
    }
    sub = model_submission(ValuePredictor(dists, TASKS), features_of(TASKS), work, settings,
                           policy="cost", alpha=0.05)  # fmt: skip
    return work, settings, {"model": sub}


def _run(world, names: list[str], **replay: object):  # type: ignore[no-untyped-def]
    work, settings, subs = world
    cfg = settings.replay.model_copy(update=replay)
    settings = settings.model_copy(update={"replay": cfg})
    plans = make_plans(work, cfg, subs, names, settings=settings)
    return plans, run_plans(work, plans, cfg, settings)


def _per_task(result) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    return {name: np.asarray(getattr(result, name)) for name in PER_TASK}


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    for name in PER_TASK:
        np.testing.assert_array_equal(_per_task(a)[name], _per_task(b)[name], err_msg=name)


def test_the_control_arm_runs_the_canary_as_the_control_task_for_task(world) -> None:  # type: ignore[no-untyped-def]
    plans, results = _run(world, ["scouts", "canary"], canary_arm="control")
    scouts, canary = plans
    arms = canary.canary.arms
    assert set(arms.tolist()) == {"canary", "control"}  # every task eligible, both drawn
    assert canary.canary.scouted.all() and canary.sizer is None
    np.testing.assert_array_equal(canary.ram, scouts.ram)
    np.testing.assert_array_equal(canary.use_scouts, np.ones(len(TASKS), dtype=bool))
    _same(results["canary"], results["scouts"])  # A/A: only the draw tells the arms apart
    draw, work = canary.canary, world[0]
    written = Rehearsal(work, results["canary"], draw.arms, draw.reasons, draw.ram,
                        draw.cputime, {}, draw.scouted)  # fmt: skip
    np.testing.assert_array_equal(written.unit_is_scout, work.is_scout)  # "sj" in both arms


def test_the_online_arm_sizes_the_canarys_tasks_and_no_other(world) -> None:  # type: ignore[no-untyped-def]
    plans, results = _run(world, ["canary"], canary_arm="online")
    (plan,) = plans
    canary = plan.canary.arms == "canary"
    assert 0 < canary.sum() < len(TASKS)
    assert sorted(plan.sizer.memory) == np.flatnonzero(canary).tolist()
    assert plan.sizes_at_start and plan.ladder_beside_sizer
    np.testing.assert_array_equal(plan.use_scouts, ~canary)  # the control keeps its scouts
    result = results["canary"]
    work = world[0]
    in_canary = canary[work.task]
    assert result.sizing["learnt"] == result.attempts[in_canary].sum()  # the canary's only
    assert result.sizing["tasks"] == canary.sum()


def test_the_online_arm_at_share_one_is_the_online_strategy(world) -> None:  # type: ignore[no-untyped-def]
    _, online = _run(world, ["online"])
    plans, canary = _run(world, ["canary"], canary_arm="online", canary_share=1.0)
    assert (plans[0].canary.arms == "canary").all()
    _same(canary["canary"], online["online"])
    assert canary["canary"].sizing == online["online"].sizing


def test_an_unknown_arm_is_refused_by_name() -> None:
    with pytest.raises(ValidationError, match="canary_arm"):
        ReplaySettings(canary_arm="bayes")


def test_the_online_arm_without_a_prior_names_the_arm(world) -> None:  # type: ignore[no-untyped-def]
    work, settings, subs = world
    sub = subs["model"]
    bare = {"model": type(sub)(**{**sub.__dict__, "job_priors": {}})}
    with pytest.raises(ValueError, match="canary_arm 'online' needs the submission's prior"):
        _run((work, settings, bare), ["canary"], canary_arm="online", canary_share=0.5)
