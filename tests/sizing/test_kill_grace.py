"""The plan at a site that kills only above a grace × the allocation (PanDA's pilot): a
need between the allocation and the grace runs on at the overuse price, one above fails;
by hand, and the replay's price that asks for it (the compiled recursion against numpy's:
tests/sizing/test_distribution.py)."""

from __future__ import annotations

import numpy as np
import pytest

from scoutless.config import Settings
from scoutless.replay.traces import kill_price
from scoutless.sizing.distribution import plan
from scoutless.sizing.features import Release

TWO = np.array([1.0, 1.5])
HALF = np.array([0.5, 0.5])


def test_a_need_within_the_grace_runs_on_at_the_overuse_price_by_hand() -> None:
    # at 1: the need 1.5 runs on (1.5 ≤ 2 × 1), overuse 0.5 × 0.5 × price; at 1.5: slack 0.25
    assert plan(TWO, HALF, failure_cost=100.0, holds=0.0, grace=2.0, overuse=2.0) == 1.5
    assert plan(TWO, HALF, failure_cost=100.0, holds=0.0, grace=2.0, overuse=0.4) == 1.0
    # no grace: 1.5 above 1 is a kill at 100
    assert plan(TWO, HALF, failure_cost=100.0, holds=0.0, overuse=0.4) == 1.5


def test_a_need_past_the_grace_is_still_a_kill_by_hand() -> None:
    needs = np.array([1.0, 3.0])
    # at 1: the need 3 > 2 × 1 fails (10 × 0.5 = 5), then 3 fits; at 3: slack 2 × 0.5 = 1
    assert plan(needs, HALF, failure_cost=10.0, holds=0.0, grace=2.0, overuse=2.0) == 3.0
    # a failure priced 1: at 1 it costs 0.5 against 1 at 3
    assert plan(needs, HALF, failure_cost=1.0, holds=0.0, grace=2.0, overuse=2.0) == 1.0
    # the kill cap bounds the kill's probability, not the overuse's
    assert plan(needs, HALF, failure_cost=1.0, holds=0.0, grace=2.0, overuse=2.0,
                max_fail_probability=0.25) == 3.0  # fmt: skip
    # at 1 the need 1.5 runs on: no kill for the cap to bound (without the grace, a kill)
    assert plan(TWO, HALF, failure_cost=1.0, holds=0.0, grace=2.0, overuse=0.4,
                max_fail_probability=0.25) == 1.0  # fmt: skip
    assert plan(TWO, HALF, failure_cost=1.0, holds=0.0, overuse=0.4,
                max_fail_probability=0.25) == 1.5  # fmt: skip


@pytest.mark.parametrize("on", [False, True])
def test_the_replays_kill_price_carries_the_sites_rule_when_asked(on: bool) -> None:
    settings = Settings()
    settings = settings.model_copy(update={
        "allocation": settings.allocation.model_copy(update={"memory_kill_grace": on})})  # fmt: skip
    price = kill_price(settings)(Release(cores=1.0))
    prices = settings.allocation.prices
    if on:
        assert price.grace == settings.replay.memory_kill_factor
        assert price.overuse == pytest.approx(prices.memory_overuse_gb_hour / prices.memory_gb_hour)
    else:
        assert (price.grace, price.overuse) == (1.0, 0.0)
    # a retry's price keeps the rule (`FailurePrice.plus`)
    assert price.plus(1.0).grace == price.grace and price.plus(1.0).overuse == price.overuse
