"""Witt's low-wastage regression: the doubling's accounting, the split the reference code
draws, and the fit on hand-worked histories."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pandas as pd
import pytest

from scoutless.sizing import lwr
from scoutless.sizing.protocol import Instances, TaskType, walk

GB, HOUR = 1e9, 3.6e6


@pytest.fixture(autouse=True)
def _two_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two models of the ten (each is fitted alike): the cases hold for any count."""
    monkeypatch.setattr(lwr, "MODELS", 2)


def test_doubling_accounts_a_hand_worked_instance() -> None:
    # need 3 from 1: 1 and 2 fail (3 under, 2 failures), 4 fits (1 over); need 1 from 2: 1 over
    over, under, fails = lwr.exponential_waste(np.array([1.0, 2.0]), np.array([3.0, 1.0]), np.ones(2))
    assert (over, under, fails) == (2.0, 3.0, 2)


@pytest.mark.parametrize(("n", "frac", "seed"), [(57, 0.3, 1996), (40, 0.7, 3), (34, 0.3, 42)])
def test_the_split_is_the_one_pandas_draws(n: int, frac: float, seed: int) -> None:
    expected = pd.DataFrame({"a": range(n)}).sample(frac=frac, random_state=seed).index
    assert list(lwr.pandas_sample(n, frac, seed)) == list(expected)


def test_a_constant_need_is_allocated_at_the_floor_above_it() -> None:
    # every need 5 GB: scaled needs are all 0, so any line above the floor 0.01 wastes more
    # than the floor itself; every model sits there: the allocation is the need + 0.01 byte
    x = np.linspace(1, 40, 40) * GB
    model = lwr.fit(x, np.full(40, 5 * GB), np.ones(40) * HOUR)
    assert model.predict(np.array([2 * GB, 39 * GB])) == pytest.approx(5 * GB + 0.01, abs=1e-3)


def test_a_need_linear_in_the_input_is_followed_by_the_line() -> None:
    # need = 1 GB + 2 × input exactly: the least-wastage line is that line (floored at the
    # smallest need by 0.01 of the range); COBYLA gets within a percent of it
    x = np.linspace(1, 20, 60) * GB
    model = lwr.fit(x, 1 * GB + 2 * x, np.ones(60) * HOUR)
    probe = np.array([3.3, 10.1, 17.7]) * GB
    assert model.predict(probe) == pytest.approx(1 * GB + 2 * probe, rel=0.02)


def test_quantile_line_recovers_a_median_line() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 400)
    y = 0.2 + 0.5 * x + rng.laplace(0, 0.01, 400)
    icpt, upper = lwr.quantile_line(x, y, 0.5)
    assert icpt == pytest.approx(0.2, abs=0.01) and 0.5 < upper < 0.52


def test_online_sizer_refits_as_outcomes_come_and_doubles_on_failure() -> None:
    x = np.linspace(1, 10, 40) * GB
    inst = Instances(need=1 * GB + x, runtime=np.full(40, HOUR), input_size=x, cpus=np.ones(40),
                     request=np.full(40, 64 * GB), peak=1 * GB + x)  # fmt: skip
    every4 = np.arange(0, 40, 4)
    hist, online = inst.take(every4), inst.take(np.setdiff1d(np.arange(40), every4))
    sizer, fits = lwr.LowWastage(), []
    sizer._refit = lambda real=sizer._refit: (fits.append(len(sizer.need)), real())[1]
    tally = walk(sizer, TaskType("wf", "t", hist, online), keep_attempts=True)
    assert fits == [10, 20, 40]  # the history, then each time the needs seen doubled
    for allocs in tally.attempts:
        assert all(b == 2 * a for a, b in pairwise(allocs))
    assert tally.summary()["wastage_gbh"] < 0.05 * float(np.sum(online.need * online.runtime)) / GB / HOUR


def test_an_unknown_input_size_fits_a_constant_above_every_need_seen_mostly() -> None:
    # no input size (NaN, as before the run): one allocation for all, near the top needs
    need = np.linspace(1, 2, 30) * GB
    model = lwr.fit(np.full(30, np.nan), need, np.ones(30) * HOUR)
    a = model.predict(np.array([np.nan, np.nan]))
    assert np.isfinite(a).all() and a[0] == a[1] and 1 * GB < a[0] <= 2.1 * GB


def test_the_same_history_is_fitted_once_and_other_constants_fit_anew(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    x = np.linspace(1, 10, 20) * GB
    first = lwr.fit(x, 1 * GB + x, np.ones(20) * HOUR)
    assert lwr.fit(x.copy(), 1 * GB + x, np.ones(20) * HOUR) is first
    monkeypatch.setattr(lwr, "MODELS", 1)
    assert len(lwr.fit(x, 1 * GB + x, np.ones(20) * HOUR).lines) == 1
