"""The answer's one distribution: classes' masses from the classifier, the value model's
shape inside a class. Whatever the two models say, ``p_sufficient`` stays between
P(class < reported) and P(class <= reported); where they agree it is the value model's CDF."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.allocation.reconcile import place_in_class, sufficient_probability
from scoutless.allocation.values import ValueDistribution
from scoutless.targets.bins import TargetBins

BINS = TargetBins(
    "memory", "MB/core", (0, 1000, 2000, 4000, float("inf")), ("<=1GB", "1-2GB", "2-4GB", ">4GB")
)
EDGES = np.asarray(BINS.edges)


def _case(seed: int, n: int = 400):
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.full(BINS.n_classes, 0.5), n)
    dist = ValueDistribution.of(-1.0, rng.normal(7.0, 1.5, n), rng.uniform(0.05, 1.5, n))
    value = np.exp(rng.normal(7.5, 1.5, n))
    return proba, dist, value, np.maximum(BINS.classify(value), 0)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_p_sufficient_lies_between_the_class_bounds_whatever_the_models_say(seed):
    proba, dist, value, classes = _case(seed)
    p = sufficient_probability(proba, EDGES, classes, dist, value)
    cdf = np.cumsum(proba, axis=1)
    rows = np.arange(len(p))
    upto = cdf[rows, classes]
    below = upto - proba[rows, classes]
    assert np.all(p >= below - 1e-12) and np.all(p <= upto + 1e-12)


def test_it_is_a_cdf_whose_class_masses_are_the_classifiers():
    proba, dist, _, _ = _case(3, n=50)
    grid = np.geomspace(1, 1e6, 300)
    previous = np.zeros(50)
    for v in grid:
        value = np.full(50, v)
        p = sufficient_probability(proba, EDGES, np.maximum(BINS.classify(value), 0), dist, value)
        assert np.all(p >= previous - 1e-12)  # monotone in the value
        previous = p
    for c in range(BINS.n_classes - 1):  # at a class's upper edge: P(class <= c)
        value = np.full(50, EDGES[c + 1])
        p = sufficient_probability(proba, EDGES, np.full(50, c), dist, value)
        np.testing.assert_allclose(p, np.cumsum(proba, axis=1)[:, c], atol=1e-12)


def test_where_the_models_agree_it_is_the_value_models_cdf():
    rng = np.random.default_rng(0)
    dist = ValueDistribution.of(-1.0, rng.normal(7.5, 0.8, 200), rng.uniform(0.2, 0.8, 200))
    at_edges = np.stack([dist.cdf(np.full(200, e)) for e in EDGES], axis=1)
    proba = np.diff(at_edges, axis=1)  # the classes the value model implies
    value = dist.quantile(0.9)
    p = sufficient_probability(proba, EDGES, np.maximum(BINS.classify(value), 0), dist, value)
    np.testing.assert_allclose(p, 0.9, atol=2e-3)  # the prior's blend moves it a hair at most


def test_a_class_the_value_model_ignores_is_read_by_the_values_place_in_it():
    lo, hi = np.array([1000.0, 4000.0]), np.array([2000.0, np.inf])
    place = place_in_class(np.array([1000.0, 8000.0]), lo, hi)
    assert place[0] == pytest.approx(0.0) and place[1] == 0.5
    dist = ValueDistribution.of(-1.0, np.array([2.0]), np.array([0.1]))  # needs ~7: far below
    proba = np.array([[0.1, 0.6, 0.2, 0.1]])
    value = np.array([np.sqrt(1001.0 * 2001.0) - 1])  # halfway through class 1 on log1p
    p = sufficient_probability(proba, EDGES, np.array([1]), dist, value)
    assert p[0] == pytest.approx(0.1 + 0.6 * 0.5, abs=1e-6)


def test_mismatched_lengths_are_refused_naming_each():
    proba, dist, value, classes = _case(1, n=5)
    with pytest.raises(ValueError, match="5 probability rows, 4 classes"):
        sufficient_probability(proba, EDGES, classes[:4], dist, value)
