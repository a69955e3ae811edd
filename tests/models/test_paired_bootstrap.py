"""The paired time-block bootstrap behind the guard's robust selection."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score

from scoutless.models.paired_bootstrap import (
    block_confusions,
    macro_f1_accuracy,
    margin_lower_bounds,
    time_blocks,
)

classes = st.integers(min_value=2, max_value=5).flatmap(
    lambda k: st.tuples(
        st.just(k),
        st.lists(st.tuples(st.integers(0, k - 1), st.integers(0, k - 1)), min_size=1, max_size=80),
    )
)


@settings(max_examples=60, deadline=None)
@given(classes)
def test_scores_from_confusions_equal_scikit_learn(case):
    k, pairs = case
    y, predicted = (np.array(v, dtype=np.int64) for v in zip(*pairs, strict=True))
    f1, acc = macro_f1_accuracy(block_confusions(y, predicted, np.zeros(len(y), np.int64), k)[0])
    assert np.isclose(f1, f1_score(y, predicted, average="macro", zero_division=0))
    assert np.isclose(acc, np.mean(y == predicted))


@settings(max_examples=40, deadline=None)
@given(classes, st.integers(2, 12))
def test_a_classifier_has_zero_margin_over_itself(case, n_blocks):
    k, pairs = case
    y, predicted = (np.array(v, dtype=np.int64) for v in zip(*pairs, strict=True))
    bounds = margin_lower_bounds(
        y, [predicted], predicted, np.arange(len(y)), k,
        quantile=0.025, n_blocks=n_blocks, n_resamples=50,
    )  # fmt: skip
    assert bounds.tolist() == [0.0]


def test_blocks_are_contiguous_runs_of_time():
    order = np.array([5.0, 1.0, 3.0, 2.0, 4.0, 0.0])
    assert time_blocks(order, 3).tolist() == [2, 0, 1, 1, 2, 0]


def test_a_lead_that_lives_in_one_burst_is_not_robust():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 1000)
    reference = np.where(rng.random(1000) < 0.7, y, (y + 1) % 3)
    steady = np.where(rng.random(1000) < 0.8, y, (y + 1) % 3)  # better everywhere
    burst = reference.copy()
    burst[:100] = y[:100]  # better only in the first tenth of the time
    burst[100:] = np.where(rng.random(900) < 0.65, y[100:], (y[100:] + 1) % 3)
    steady_bound, burst_bound = margin_lower_bounds(
        y, [steady, burst], reference, np.arange(1000), 3,
        quantile=0.025, n_blocks=10, n_resamples=400,
    )  # fmt: skip
    assert steady_bound > 0 > burst_bound
