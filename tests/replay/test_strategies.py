"""The six strategies on hand-built tasks: what each allocates, and what selective scouts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from replay_helpers import ValuePredictor, features_of, jobs_frame, settings_with, tasks_frame

from scoutless.allocation.values import ValueDistribution
from scoutless.config import Prices
from scoutless.replay.runner import run_strategies, submissions_for
from scoutless.replay.strategies import make_plans
from scoutless.replay.submission import (
    Submission,
    history_decision,
    model_submission,
    oracle_submission,
    truth_submission,
)
from scoutless.replay.submission import workload_context as job_context
from scoutless.replay.workload import build_workload

H = 3600.0
NARROW, WIDE = 0.05, 1.0


def _three_tasks(settings):
    """Tasks 1-3: 30 jobs of 10 h and 1,500 MB each, the first 10 flagged as scouts."""
    jobs = pd.concat(
        [
            jobs_frame(t, [10.0] * 30, [1500] * 30, scouts=10, first_pandaid=100 * t)
            for t in (1, 2, 3)
        ]
    )
    return build_workload(jobs, tasks_frame([1, 2, 3]), settings)


def _model(memory_sigma: list[float], unknown: tuple[int, ...] = ()) -> ValuePredictor:
    dists = {
        "memory": ValueDistribution.of(0, np.log([1500.0] * 3), memory_sigma),
        "cputime": ValueDistribution.of(0, np.log([400.0] * 3), NARROW),
        "walltime": ValueDistribution.of(0, np.log([10 * H] * 3), NARROW),
    }
    return ValuePredictor(dists, [1, 2, 3], unknown=unknown)


def _exact_scouts(settings):
    """The same settings with scouts that measure a task's need exactly."""
    alloc = settings.allocation.model_copy(update={"prices": Prices(scout_error_sigma=0.0)})
    return settings.model_copy(update={"allocation": alloc})


def test_selective_scouts_the_wide_and_the_unknown_tasks_only():
    settings = _exact_scouts(settings_with())
    work = _three_tasks(settings)
    predictor = _model([NARROW, WIDE, NARROW], unknown=(3,))
    sub = model_submission(predictor, features_of([1, 2, 3]), work, settings, policy="cost",
                           alpha=0.05, choose_scouts=True)  # fmt: skip
    assert sub.choice.scout.tolist() == [False, True, True]
    assert sub.choice.unknown.tolist() == [False, False, True]
    assert "never seen" in sub.choice.reasons()[2]
    # the wide task is scouted because predicting it costs more than the scouts' wait
    assert sub.choice.predict_cost[1] > sub.choice.scout_cost[1]
    assert sub.choice.predict_cost[0] < sub.choice.scout_cost[0]
    results = run_strategies(work, settings.replay, settings, {"model": sub}, names=["selective"])
    first = results["selective"].first_production_s
    assert first[0] == 0.0 and first[1] > 0 and first[2] > 0  # the scouted wait for scouts
    assert results["selective"].scout_ram[1] == pytest.approx(1500 * 1.10)


def test_noisy_scouts_make_scouting_dearer():
    # scouts' error (Prices.scout_error_sigma): half the time their cpuTime is below the
    # need and the jobs are killed, so scouting a narrow task costs more than with exact
    # scouts; the narrow tasks are predicted either way, the unknown one scouted either way
    settings = settings_with()
    work = _three_tasks(settings)
    predictor = _model([NARROW, WIDE, NARROW], unknown=(3,))
    choices = [
        model_submission(predictor, features_of([1, 2, 3]), work, s, policy="cost",
                         alpha=0.05, choose_scouts=True).choice
        for s in (settings, _exact_scouts(settings))
    ]  # fmt: skip
    noisy, exact = choices
    assert (noisy.scout_cost[[0, 2]] > exact.scout_cost[[0, 2]]).all()
    assert noisy.predict_cost == pytest.approx(exact.predict_cost)
    assert noisy.scout[[0, 2]].tolist() == exact.scout[[0, 2]].tolist() == [False, True]


def test_the_cost_policy_is_the_default_and_a_class_policy_is_still_possible():
    settings = settings_with()
    assert settings.replay.policy == "cost"
    with pytest.raises(ValueError, match=r"replay\.policy"):
        settings_with(policy="greedy")


def test_bayes_uses_the_rule_of_predicted_on_the_truth():
    settings = settings_with()
    work = _three_tasks(settings)
    predictor = _model([NARROW, WIDE, NARROW])
    truth = predictor.dists
    alloc = settings.allocation.model_copy(update={"load_rounds": 0})
    settings = settings.model_copy(update={"allocation": alloc})
    bayes = truth_submission(truth, work, settings, policy="cost", alpha=0.05)
    # the one decision, fed the truth (exact: no levels) and what the history shows
    decided = history_decision(work, settings).allocate(
        truth, {}, job_context(work, truth["walltime"].median()), policy="cost", alpha=0.05,
        kinds=work.kind, targets=["memory", "cputime"],
    )  # fmt: skip
    assert np.array_equal(bayes.ram, decided["memory"].value)
    assert np.array_equal(bayes.cputime, decided["cputime"].value)
    value = truth_submission(truth, work, settings, policy="value", alpha=0.05)
    assert np.allclose(value.ram, truth["memory"].quantile(0.95))


def test_bayes_is_skipped_with_a_reason_without_truth_or_with_a_class_policy():
    settings = settings_with()
    work = _three_tasks(settings)
    common = {"predictor": None, "features": None, "alpha": 0.05}
    subs, skipped = submissions_for(["bayes", "oracle"], work, settings, truth=None,
                                    policy="cost", **common)  # fmt: skip
    assert "bayes" in skipped and "truth" in skipped["bayes"] and set(subs) == {"oracle"}
    truth = _model([NARROW] * 3).dists
    _, skipped = submissions_for(["bayes"], work, settings, truth=truth, policy="risk", **common)
    assert "class" in skipped["bayes"]


def test_the_oracle_allocates_each_tasks_own_target_values_and_is_never_killed():
    settings = settings_with()
    walls = [1.0 + i / 20 for i in range(20)]
    pss = [500 + 100 * i for i in range(20)]
    work = build_workload(jobs_frame(1, walls, pss), tasks_frame([1]), settings)
    oracle = oracle_submission(work, settings)
    assert oracle.ram[0] == pytest.approx(np.percentile(pss, 75) * 1.10)
    low = Submission.of({"memory": [500.0], "cputime": [20.0]})  # 2,000 s: too short
    results = run_strategies(
        work, settings.replay, settings, {"oracle": oracle}, names=["oracle", "scouts"]
    )
    assert results["oracle"].memory_kills[0] == 0 and results["oracle"].walltime_kills[0] == 0
    assert results["oracle"].first_ok.all()
    plans = make_plans(work, settings.replay, {"model": low}, names=["predicted"])
    starved = run_strategies(work, settings.replay, settings, {"model": low}, names=["predicted"])
    assert plans[0].ram[0] == 500.0 and starved["predicted"].walltime_kills[0] > 0


def test_job_context_takes_each_tasks_jobs_and_the_given_walltime():
    settings = settings_with()
    work = _three_tasks(settings)
    job = job_context(work, np.array([H, np.nan, -1.0]))
    assert job.n_jobs.tolist() == [30, 30, 30] and job.nevents.tolist() == [1000] * 3
    assert job.core_power.tolist() == [10.0] * 3
    assert job.wall_s.tolist() == [H, H, H]  # missing or impossible: the one-hour fallback


def test_every_history_strategy_has_a_plan_and_selective_mixes_two():
    settings = _exact_scouts(settings_with())
    work = _three_tasks(settings)
    predictor = _model([NARROW, WIDE, NARROW], unknown=(3,))
    subs = {
        "model": model_submission(predictor, features_of([1, 2, 3]), work, settings,
                                  policy="cost", alpha=0.05, choose_scouts=True),
        "bayes": truth_submission(predictor.dists, work, settings, policy="cost", alpha=0.05),
        "oracle": oracle_submission(work, settings),
    }  # fmt: skip
    plans = {p.name: p for p in make_plans(work, settings.replay, subs)}
    assert list(plans) == ["scouts", "predicted", "hybrid", "selective", "bayes", "oracle"]
    selective = plans["selective"]
    assert selective.use_scouts.tolist() == [False, True, True]
    assert selective.ram[1] == settings.replay.default_ram_mb_per_core  # the request
    assert selective.ram[0] == plans["hybrid"].ram[0]
    assert not plans["bayes"].use_scouts and not plans["oracle"].retune


def test_the_cost_model_meets_the_queue_maxtime_the_engine_applies():
    from scoutless.replay.site_rules import site_rules

    work = _three_tasks(settings_with())  # its longest job: 10 h
    for maxtime, expected in ((None, 10 * H), (5 * H, 10 * H), (20 * H, 20 * H)):
        cfg = settings_with().replay.model_copy(update={"queue_maxtime_s": maxtime})
        rules = site_rules(work, cfg)
        assert rules.max_maxtime_s == expected
