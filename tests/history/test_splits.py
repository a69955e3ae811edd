"""The one splits module: held-out counts, time order, stratification, parts."""

from __future__ import annotations

import numpy as np
import pytest

from scoutless.config import Settings
from scoutless.history.splits import (
    assign_parts,
    forward_parts,
    n_test_rows,
    random_split,
    time_split,
)


@pytest.mark.parametrize(("n", "expected"), [(0, 0), (1, 0), (2, 1), (7, 2), (10, 2), (40, 6),
                                             (100, 15), (1000, 150)])  # fmt: skip
def test_held_out_count_is_ceil_of_the_fraction(n, expected):
    assert n_test_rows(n, 0.15) == expected


def test_fraction_outside_zero_one_is_refused():
    with pytest.raises(ValueError, match="test_fraction"):
        n_test_rows(10, 1.0)


def test_time_split_holds_out_the_latest_rows_ties_in_row_order():
    order = np.array([5, 1, 9, 3, 9, 7, 2, 8, 4, 6])
    split = time_split(order, 0.2)
    assert list(np.flatnonzero(split == "test")) == [2, 4]  # the two 9s, the latest
    ties = time_split(np.zeros(10), 0.3)
    assert list(np.flatnonzero(ties == "test")) == [7, 8, 9]


def test_random_split_is_exact_seeded_and_stratified():
    strata = np.repeat([0, 1, 2], [600, 300, 100])
    split = random_split(1000, seed=1, test_fraction=0.15, strata=strata)
    assert (split == "test").sum() == 150
    for s, n in ((0, 600), (1, 300), (2, 100)):
        assert (split[strata == s] == "test").sum() == pytest.approx(0.15 * n, abs=1)
    again = random_split(1000, seed=1, test_fraction=0.15, strata=strata)
    np.testing.assert_array_equal(split, again)
    other = random_split(1000, seed=2, test_fraction=0.15, strata=strata)
    assert not np.array_equal(split, other)


def test_random_split_falls_back_to_plain_when_a_stratum_is_a_single_row():
    strata = np.array([0] * 50 + [1])
    split = random_split(51, seed=0, test_fraction=0.2, strata=strata)
    assert (split == "test").sum() == n_test_rows(51, 0.2)
    assert list(random_split(1, seed=0, test_fraction=0.2)) == ["train"]


def test_assign_parts_follows_fractions_in_every_stratum():
    strata = np.repeat([0, 1], [700, 300])
    parts = assign_parts(strata, {"a": 0.5, "b": 0.3, "c": 0.2}, seed=0)
    for s, n in ((0, 700), (1, 300)):
        got = parts[strata == s]
        assert [(got == p).sum() for p in "abc"] == [round(n * f) for f in (0.5, 0.3, 0.2)]


FRACTIONS = Settings().splits.part_fractions()


def test_assign_parts_is_stratified_seeded_and_keeps_tiny_strata():
    strata = np.repeat([[0, 1], [1, 0], [2, 2]], [1000, 200, 1], axis=0)
    parts = assign_parts(strata, FRACTIONS, seed=3)
    for key in ([0, 1], [1, 0]):
        share = parts[(strata == key).all(axis=1)]
        assert (share == "fit").mean() == pytest.approx(0.70, abs=0.01)
        assert (share == "calibration").mean() == pytest.approx(0.15, abs=0.01)
    assert parts[-1] == "fit"
    np.testing.assert_array_equal(parts, assign_parts(strata, FRACTIONS, seed=3))
    assert not np.array_equal(parts, assign_parts(strata, FRACTIONS, seed=4))


def test_forward_parts_fit_on_the_past_and_validate_on_the_latest_rows():
    order = np.random.default_rng(0).permutation(200).astype(float)
    parts = forward_parts(order, {"fit": 0.7, "validation": 0.15, "calibration": 0.15}, seed=1)
    fit, later = order[parts == "fit"], order[parts != "fit"]
    assert len(fit) == 140 and fit.max() < later.min()
    assert {"validation", "calibration"} == set(parts[parts != "fit"])
    assert abs((parts == "validation").sum() - 30) <= 1
