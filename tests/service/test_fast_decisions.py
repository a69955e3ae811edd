"""The pipeline's shortcuts in the value decisions answer what the code before them
answered: the class holding a value is ``np.maximum(bins.classify(value), 0)``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoutless.fast_paths import current
from scoutless.service.decisions import _holding_class
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
