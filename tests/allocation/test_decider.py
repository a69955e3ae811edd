"""The one decision: built from the settings, prices each width at its standard type's
prices, clamps to what the site allocates, and prices the jobs' spread a table carries."""

from __future__ import annotations

import numpy as np
import pytest

from scoutless.allocation.context import job_context
from scoutless.allocation.decider import SiteDecision
from scoutless.allocation.spread_table import ANY, SpreadTable
from scoutless.allocation.values import JobSpread, ValueDistribution
from scoutless.config import PandaDefaults, Settings


def _tasks(cores: list[float]) -> tuple[dict[str, ValueDistribution], object]:
    n = len(cores)
    dists = {
        "memory": ValueDistribution.of(0, np.log(np.full(n, 1800.0)), 0.4),
        "cputime": ValueDistribution.of(0, np.log(np.full(n, 30.0)), 0.3),
    }
    numbers = {"corecount": np.asarray(cores, float), "input_nfiles": np.full(n, 20.0),
               "nfiles_per_job": np.ones(n), "nevents_per_job": np.full(n, 100.0)}  # fmt: skip
    return dists, job_context(numbers, n, PandaDefaults(), np.full(n, 4 * 3600.0))


def _allocated(settings: Settings, cores: list[float], **kw) -> dict:
    dists, job = _tasks(cores)
    return SiteDecision.of(settings, **kw).allocate(dists, {}, job, policy="cost", alpha=0.05)


def test_the_rules_follow_the_settings():
    settings = Settings(allocation={"guaranteed_memory_grace": 1.7})
    decision = SiteDecision.of(settings)
    assert decision.rules[False].memory_kill_factor == 1.7 == decision.rules[True].memory_kill_factor


def test_each_width_is_priced_at_its_standard_resource_types_prices():
    dear = {"memory_gb_hour": 5.0, "memory_overuse_gb_hour": 10.0}
    plain = _allocated(Settings(), [1, 8])
    mcore = _allocated(Settings(allocation={"resource_prices": {"MCORE": dear}}), [1, 8])
    assert mcore["memory"].value[0] == plain["memory"].value[0]  # SCORE: its own prices
    assert mcore["memory"].value[1] < plain["memory"].value[1]  # MCORE: dearer memory
    # a request of one width alone is the same decision as its rows in a mixed one
    alone = _allocated(Settings(allocation={"resource_prices": {"MCORE": dear}}), [8])
    assert alone["memory"].value[0] == mcore["memory"].value[1]


def test_a_kill_cap_per_target_holds():
    capped = Settings(allocation={"kill_probability_by_target": {"memory": 0.02}})
    out = _allocated(capped, [1, 1, 8])
    assert (out["memory"].kill_probability <= 0.02 + 1e-12).all()
    assert (out["cputime"].kill_probability <= 0.25 + 1e-12).all()


def test_values_stay_within_what_the_site_allocates():
    settings = Settings()
    dists, job = _tasks([1])
    dists["memory"] = ValueDistribution.of(0, np.log([1e9]), 0.1)
    out = SiteDecision.of(settings).allocate(dists, {}, job, policy="value", alpha=0.05)
    assert out["memory"].value[0] == settings.replay.ram_limit_mb_per_core


def test_the_scout_choice_is_taken_per_width():
    dists, job = _tasks([1, 8])
    decision = SiteDecision.of(Settings())
    choice = decision.scouting(decision.allocate(dists, {}, job, policy="cost", alpha=0.05), job)
    alone = decision.scouting(
        decision.allocate({t: d.take([1]) for t, d in dists.items()}, {}, job.take([1]),
                          policy="cost", alpha=0.05), job.take([1]),
    )  # fmt: skip
    assert choice.predict_cost[1] == pytest.approx(alone.predict_cost[0], rel=1e-12)


def test_a_spread_table_learns_what_pooled_spreads_learn_and_survives_json():
    rng = np.random.default_rng(3)
    ratios = rng.lognormal(0, 0.3, 400)
    job_kind = np.where(np.arange(400) < 300, "simul", "reco")
    table = SpreadTable.learn({"memory": ratios}, job_kind, points=8, min_jobs=120)
    kinds = np.array(["simul", "reco", "evgen"], dtype=object)
    pooled = JobSpread.pooled(ratios, job_kind, kinds, points=8, min_jobs=120)
    spread = table.spread("memory", kinds)
    assert np.array_equal(spread.factors, pooled.factors)
    assert np.array_equal(spread.factors[2], table.factors["memory"][ANY])
    again = SpreadTable.from_dict(table.to_dict()).spread("memory", [None, "simul"])
    assert np.array_equal(again.factors[1], spread.factors[0])
    assert table.spread("cputime", kinds) is None  # no such target: no spread


def test_a_spread_raises_the_cost_aware_memory():
    table = SpreadTable.learn({"memory": np.r_[np.ones(100), np.full(100, 1.6)]},
                              np.full(200, "simul"), points=4)  # fmt: skip
    dists, job = _tasks([1])
    dists["memory"] = ValueDistribution.of(0, np.log([4000.0]), 0.2)  # HIMEM either way
    values = [
        SiteDecision.of(Settings(), spreads).allocate(
            dists, {}, job, policy="cost", alpha=0.05, kinds=["simul"])["memory"].value[0]
        for spreads in (None, table)
    ]  # fmt: skip
    assert values[1] > values[0]
