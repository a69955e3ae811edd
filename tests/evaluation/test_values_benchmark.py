"""``benchmarks/values.py``'s measure: a served value that is the truth's own scores 1 against
the Bayes value, one from a blurred location more; the goals sit at the sizes item 5 names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmark_modules import benchmark_module
from scoutless.allocation.values import ConformalLevels, ValueDistribution
from scoutless.targets.spec import truth_col, value_col


@pytest.fixture(scope="module")
def values_benchmark():
    with benchmark_module("values") as module:
        yield module


def _tasks(n: int, seed: int) -> tuple[ValueDistribution, pd.DataFrame]:
    """Tasks with a true distribution each and one need drawn from it."""
    rng = np.random.default_rng(seed)
    mu, sigma = rng.normal(5.0, 1.0, n), rng.uniform(0.1, 0.6, n)
    truth = ValueDistribution.of(0.0, mu, sigma)
    need = np.exp(mu + sigma * rng.normal(size=n))
    frame = pd.DataFrame({
        value_col("memory"): need, truth_col("memory", "mu"): mu,
        truth_col("memory", "sigma"): sigma, truth_col("memory", "offset"): 0.0,
    })  # fmt: skip
    return truth, frame


def test_the_truth_served_scores_one_and_a_wider_one_more(values_benchmark):
    cal_truth, cal = _tasks(4000, 0)
    test_truth, test = _tasks(20000, 1)
    need = cal[value_col("memory")].to_numpy()
    served = values_benchmark.figures(
        test_truth, ConformalLevels.fit(cal_truth, need), test, "memory", 0.05
    )
    assert served["fair"] == pytest.approx(1.0, abs=0.02), served
    assert served["under_allocation"] == pytest.approx(0.05, abs=0.01), served
    rng = np.random.default_rng(2)

    def blurred(truth: ValueDistribution) -> ValueDistribution:
        """A location off by 0.3 in log units, the spread widened to cover it."""
        mu = truth.mu + rng.normal(scale=0.3, size=len(truth.mu))
        return ValueDistribution.of(0.0, mu, np.hypot(truth.sigma, 0.3))

    worse = values_benchmark.figures(
        blurred(test_truth), ConformalLevels.fit(blurred(cal_truth), need), test, "memory", 0.05
    )
    assert worse["fair"] > served["fair"] + 0.05, (served, worse)


def test_the_goals_are_item_5s(values_benchmark):
    assert values_benchmark.goal_for(20_000) == 1.05
    assert values_benchmark.goal_for(200_000) == 1.03
    assert values_benchmark.goal_for(50_000) is None


def test_the_fair_interval_brackets_the_figure_and_narrows_with_tasks(values_benchmark):
    """A blurred location served: the interval brackets the fair ratio, lies above 1, and
    four times the tasks about halve it (1/√n)."""
    rng = np.random.default_rng(7)

    def blurred(truth: ValueDistribution) -> ValueDistribution:
        mu = truth.mu + rng.normal(scale=0.3, size=len(truth.mu))
        return ValueDistribution.of(0.0, mu, np.hypot(truth.sigma, 0.3))

    cal_truth, cal = _tasks(4000, 6)
    levels = ConformalLevels.fit(blurred(cal_truth), cal[value_col("memory")].to_numpy())
    widths = []
    for n in (2000, 8000):
        truth, frame = _tasks(n, 5)
        fair = values_benchmark.figures(blurred(truth), levels, frame, "memory", 0.05)
        low, high = fair["fair_95"]
        assert 1.0 < low <= fair["fair"] <= high, fair
        widths.append(high - low)
    assert 0.35 * widths[0] < widths[1] < 0.75 * widths[0], widths
