"""The cost-aware allocation against hand-worked cases: where the median wins, where an
upper quantile wins, where scouting wins; and the prices' validation."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from scoutless.allocation.allocate import cost_allocation, selective, value_allocation
from scoutless.allocation.context import JobContext
from scoutless.allocation.costs import memory_cost
from scoutless.allocation.site import SiteRules
from scoutless.allocation.values import ValueDistribution
from scoutless.config import AllocationSettings, Prices, Settings

#: strict kill (k = 1), every allocation above the standard slot, no HIMEM premium
STRICT = SiteRules(memory_kill_factor=1.0, standard_mb_per_core=1000.0)


def _jobs(n: int, *, n_jobs: float = 10.0, cores: float = 1.0, wall_h: float = 2.0) -> JobContext:
    full = lambda v: np.full(n, float(v))  # noqa: E731
    return JobContext(
        cores=full(cores), wall_s=full(wall_h * 3600), nevents=full(100), core_power=full(10),
        cpu_efficiency=full(90), base_walltime_s=full(600), n_jobs=full(n_jobs),
    )  # fmt: skip


def _memory(sigma: float) -> ValueDistribution:
    return ValueDistribution.of(0.0, np.log([3000.0]), [sigma])


def test_memory_cost_by_hand():
    job = _jobs(1, cores=2, wall_h=1)
    prices = Prices(kill_overhead=1.0, memory_gb_hour=0.5, himem_core_hour=0.0)
    # 4096 MB/core held for a 3072 MB/core need: 1 GB/core slack x 2 cores x 1 h x 0.5
    slack = memory_cost(np.array([[4096.0]]), np.array([[3072.0]]), job, STRICT, prices)
    assert slack[0, 0] == pytest.approx(1.0)
    # 2048 held, 4096 needed: killed halfway (PSS grows linearly), and the retry costs the
    # whole job once more (kill_overhead 1): 2 cores x 1 h x (0.5 + 1)
    kill = memory_cost(np.array([[2048.0]]), np.array([[4096.0]]), job, STRICT, prices)
    assert kill[0, 0] == pytest.approx(3.0)


def test_the_median_wins_when_a_gb_hour_of_slack_costs_as_much_as_a_core_hour_killed():
    # a GB-hour held costs 2 core-hours, a kill its partial run plus 2 x the job: the
    # marginal GB above the median saves about as much in kills as it costs in slack
    prices = Prices(kill_overhead=2.0, memory_gb_hour=2.0, himem_core_hour=0.0)
    chosen = cost_allocation("memory", _memory(0.3), None, _jobs(1), STRICT, prices)
    assert 0.4 <= chosen.p_sufficient[0] <= 0.75
    assert chosen.value[0] == pytest.approx(3000.0, rel=0.15)


def test_an_upper_quantile_wins_when_a_kill_is_dear():
    prices = Prices(kill_overhead=20.0, memory_gb_hour=0.05, himem_core_hour=0.0)
    chosen = cost_allocation("memory", _memory(0.3), None, _jobs(1), STRICT, prices)
    assert chosen.p_sufficient[0] >= 0.95
    assert chosen.value[0] > 3000.0 * np.exp(0.3 * 1.6)


def test_scouting_wins_for_a_wide_distribution_of_a_large_task():
    prices = Prices(kill_overhead=1.0, memory_gb_hour=0.25, scout_delay_hour=10.0)
    wide, narrow = _memory(1.5), _memory(0.05)
    job = _jobs(1, n_jobs=500)
    for dist, scouted in ((wide, True), (narrow, False)):
        allocation = cost_allocation("memory", dist, None, job, STRICT, prices)
        choice = selective({"memory": allocation}, job, prices)
        assert bool(choice.scout[0]) is scouted, choice.reasons()
        assert choice.reasons()[0].startswith("scout" if scouted else "predict")


def test_unknown_categories_are_scouted_whatever_the_costs():
    prices = Prices()
    job = _jobs(2)
    allocation = cost_allocation("memory", ValueDistribution.of(0, [7.0, 7.0], 0.05), None, job,
                                 STRICT, prices)  # fmt: skip
    choice = selective({"memory": allocation}, job, prices, unknown=np.array([True, False]))
    assert choice.scout.tolist() == [True, False]
    assert "never seen" in choice.reasons()[0]


def test_value_allocation_without_calibration_is_the_plain_quantile():
    dist = _memory(0.5)
    allocation = value_allocation(dist, None, 0.05)
    assert allocation.value[0] == pytest.approx(3000.0 * np.exp(0.5 * 1.6448536), rel=1e-6)
    assert allocation.p_sufficient[0] == pytest.approx(0.95)


def test_a_target_without_a_cost_model_is_refused():
    with pytest.raises(ValueError, match="no cost model for target 'io'"):
        cost_allocation("io", _memory(0.3), None, _jobs(1), STRICT, Prices())


@pytest.mark.parametrize(
    ("values", "key"),
    [
        ({"prices": {"memory_gb_hour": -1}}, "memory_gb_hour"),
        (
            {"resource_prices": {"MCORE_HIMEM": {"himem_core_hour": -2}}},
            "MCORE_HIMEM.himem_core_hour",
        ),
        ({"resource_prices": {"MCORE": {"no_such_price": 1}}}, "MCORE.no_such_price"),
    ],
)
def test_bad_prices_are_refused_naming_the_key(values, key):
    with pytest.raises(ValidationError, match=key.split(".")[-1]) as info:
        AllocationSettings.model_validate(values)
    assert key.split(".")[0] in str(info.value)


def test_resource_type_prices_override_the_global_ones():
    settings = Settings(allocation={"resource_prices": {"MCORE_HIMEM": {"himem_core_hour": 2.0}}})
    assert settings.allocation.prices_for("MCORE_HIMEM").himem_core_hour == 2.0
    assert settings.allocation.prices_for("SCORE").himem_core_hour == Prices().himem_core_hour
