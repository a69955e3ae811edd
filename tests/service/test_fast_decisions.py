"""The pipeline's shortcuts in the value decisions answer what the code before them
answered: the class holding a value is ``np.maximum(bins.classify(value), 0)``."""

from __future__ import annotations

import numpy as np
import pytest

from scoutless.service.pipeline import _holding_class
from scoutless.targets.bins import load_bins


@pytest.mark.parametrize("target", ["memory", "cputime", "io", "walltime"])
def test_the_class_holding_a_value_is_classify_s(target):
    bins = load_bins()[target]
    edges = np.asarray(bins.edges, dtype=float)
    rng = np.random.default_rng(0)
    value = np.r_[edges, edges * (1 + 1e-12), edges * (1 - 1e-12), -0.0, -1.0, np.nan,
                  np.inf, -np.inf, rng.lognormal(np.log(edges[1] + 1), 2.0, 200)]  # fmt: skip
    got = _holding_class(edges, value)
    want = np.maximum(bins.classify(value), 0)
    assert got.dtype == want.dtype and np.array_equal(got, want)
