"""The decide stage's small paths give their numpy definitions' numbers: the class holding
a value is ``np.maximum(bins.classify(value), 0)``, and a chosen class's probability and
P(class <= chosen) are numpy's, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoutless.fast_paths import current
from scoutless.service.decisions import (
    _array_holding_class,
    _chosen_readings,
    _few_chosen_readings,
    _few_holding_class,
    _holding_class,
)
from scoutless.targets.bins import load_bins


@pytest.mark.parametrize("target", ["memory", "cputime", "io", "walltime"])
def test_the_class_holding_a_value_is_classify_s(target):
    bins = load_bins()[target]
    edges = np.asarray(bins.edges, dtype=float)
    rng = np.random.default_rng(0)
    value = np.r_[edges, edges * (1 + 1e-12), edges * (1 - 1e-12), -0.0, -1.0, np.nan,
                  np.inf, -np.inf, rng.lognormal(np.log(edges[1] + 1), 2.0, 200)]  # fmt: skip
    for n in (1, current().few_tasks, len(value)):  # bisect in Python, and numpy's search
        for lo in range(0, len(value), n):
            part = value[lo : lo + n]
            got = _holding_class(edges[1:-1].tolist(), part)
            want = np.maximum(bins.classify(part), 0)
            assert got.dtype == want.dtype and np.array_equal(got, want)


@given(
    st.sampled_from(["memory", "cputime", "io", "walltime"]),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=40),
)
def test_bisect_and_search_hold_each_value_in_classify_s_class(target, values):
    bins = load_bins()[target]
    value = np.asarray(values, dtype=float)
    got = _holding_class(list(bins.edges[1:-1]), value)
    want = np.maximum(bins.classify(value), 0)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=20),
    st.lists(st.floats(-1e12, 1e12), min_size=0, max_size=6).map(sorted),
)
def test_bisect_s_class_is_the_search_s(values, inner):
    value = np.asarray(values, dtype=float)
    got, want = _few_holding_class(inner, value), _array_holding_class(inner, value)
    assert got.dtype == want.dtype and np.array_equal(got, want)


_PROBABILITY = st.floats(0.0, 1.0) | st.sampled_from([0.1, 0.2, 0.7, 1 / 3, 1e-300, 1 - 1e-16])


@given(st.integers(1, 6).flatmap(lambda k: st.lists(
    st.tuples(st.lists(_PROBABILITY, min_size=k, max_size=k), st.integers(0, k - 1)),
    min_size=1, max_size=16)))  # fmt: skip
def test_the_lists_confidence_and_sufficiency_are_numpy_s_to_the_bit(rows):
    p = np.array([row for row, _ in rows], dtype=float)
    chosen = np.array([c for _, c in rows], dtype=np.int64)
    want = _chosen_readings(p, chosen)
    got = _few_chosen_readings(p.tolist(), chosen.tolist())
    for mine, numpy_s in zip(got, want, strict=True):
        assert np.array_equal(np.array(mine).view(np.uint64), np.array(numpy_s).view(np.uint64))
