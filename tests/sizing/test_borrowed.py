"""A type sized cold starts from the same process's instances in other workflows; an
outcome of its own outside their range by more than their spread refutes them at once
(a kill on a retry, a need that fitted), rather than after `own_replaces_borrowed`."""

from __future__ import annotations

import numpy as np
import pytest

from scoutless.config import SizingSettings
from scoutless.sizing.online import Features, OnlineSizer
from scoutless.sizing.protocol import Outcome

GB = 1e9
F = Features(request=40 * GB)


def _sizer(refute: bool, **settings: int) -> OnlineSizer:
    """A sizer with another type known (its need ÷ request shapes the request's path) and
    type "t" borrowed from another workflow: 30 instances near 8 GB."""
    sizer = OnlineSizer(SizingSettings(refute_borrowed=refute, **settings))
    rng = np.random.default_rng(3)
    other = Features(request=4 * GB)
    sizer.start_type("other", [other] * 20, list(2 * GB * rng.lognormal(0, 0.1, 20)), [60.0] * 20)
    lent = list(8 * GB * rng.lognormal(0.0, 0.05, 30))
    sizer.start_type("t", [F] * 30, lent, [60.0] * 30, borrowed=True)
    return sizer


def _size(sizer: OnlineSizer, need: float) -> list[float]:
    allocations = [sizer.first("t", F)]
    while allocations[-1] < need:
        allocations.append(sizer.retry("t", F, allocations[-1]))
        assert len(allocations) < 40
    sizer.learn("t", F, Outcome(need, 60.0))
    return allocations


def test_a_need_far_past_the_borrowed_range_is_reached_in_fewer_attempts() -> None:
    refuted, held = _sizer(True), _sizer(False)
    fast, slow = _size(refuted, 20 * GB), _size(held, 20 * GB)
    assert len(fast) < len(slow)
    # the kills stay within two growth steps of the borrowed top; then the request's path
    assert fast[0] == slow[0] and len(fast) <= 3 and max(fast[:-1]) < 11 * GB
    assert refuted.types["t"].borrowed == 0 and held.types["t"].borrowed == 30
    # the next instance is sized from the type's own outcome, not the borrowed 8 GB
    assert refuted.first("t", F) > 18 * GB > held.first("t", F)


def test_a_kill_just_past_the_borrowed_top_keeps_them() -> None:
    sizer = _sizer(True)
    allocations = _size(sizer, 8.6 * GB)  # the borrowed top, then one growth step
    assert len(allocations) <= 3
    assert sizer.types["t"].borrowed == 30


@pytest.mark.parametrize(("need", "dropped"), [(8.1 * GB, False), (20 * GB, True), (3 * GB, True)])
def test_an_own_need_outside_the_borrowed_range_drops_them(need: float, dropped: bool) -> None:
    sizer = _sizer(True)
    sizer.learn("t", F, Outcome(need, 60.0))
    assert (sizer.types["t"].borrowed == 0) is dropped
    if dropped:  # only the type's own outcome is left
        assert sizer.types["t"].n_pairs() == 1


def test_a_priors_points_leave_by_the_count_alone() -> None:
    # the job follower's prior: a model's answer held as points (borrowed and pseudo)
    sizer = OnlineSizer(SizingSettings())
    points = list(2 * GB * np.exp(np.linspace(-0.4, 0.0, 10)))
    sizer.start_type("t", [F] * 10, points, [60.0] * 10, borrowed=True, pseudo=True)
    sizer.learn("t", F, Outcome(6 * GB, 60.0))
    assert sizer.types["t"].borrowed == 10


def test_a_kill_learnt_keeps_them_and_enough_own_outcomes_drop_them() -> None:
    # a kill is a bound, not a need to refit from: it never makes the borrowed rows leave
    sizer = _sizer(True)
    sizer.learn("t", F, Outcome(20 * GB, 60.0, censored=True))
    assert sizer.types["t"].borrowed == 30
    # within their range, they leave by the count: own_replaces_borrowed outcomes
    counted = _sizer(True, own_replaces_borrowed=3)
    for k in range(3):
        assert counted.types["t"].borrowed == 30, k
        counted.learn("t", F, Outcome(8.0 * GB, 60.0))
    assert counted.types["t"].borrowed == 0 and counted.types["t"].n_pairs() == 3
