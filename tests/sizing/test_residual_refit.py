"""Leave-one-out residuals, refitted as a type learns: the closed forms equal a refit per
row, a type's learnt rows carry the current models' errors (kills and a prior's points as
they were), and a type that starts from little is no longer sized by its first, poorly
fitted outcomes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.config import SizingSettings
from scoutless.sizing.models import CANDIDATES, Affine, Cores, Location, Neighbours
from scoutless.sizing.online import Features, OnlineSizer
from scoutless.sizing.protocol import Outcome

GB = 1e9


def _reference(model: Location, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """A refit on the other rows for every row (what the closed forms must equal)."""
    return Location.loo(model, xs, ys)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 40),
    seed=st.integers(0, 2**16),
    unknown=st.sampled_from([0.0, 0.3, 1.0]),
)
def test_the_closed_forms_equal_a_refit_per_row(n: int, seed: int, unknown: float) -> None:
    rng = np.random.default_rng(seed)
    xs = rng.normal(20.0, 2.0, n)  # distinct inputs: the nearest others are unambiguous
    xs[rng.random(n) < unknown] = np.nan  # inputs not known (a row then gets the mean)
    ys = rng.normal(0.0, 1.0, n) + 0.2 * np.nan_to_num(xs)
    for model in (Neighbours(), Affine()):
        np.testing.assert_allclose(
            model.loo(xs, ys), _reference(model, xs, ys), rtol=1e-7, atol=1e-9
        )


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 40), seed=st.integers(0, 2**16), slope=st.floats(-3.0, 3.0))
def test_the_cores_line_with_unknown_cores_equals_a_refit_per_row(
    n: int, seed: int, slope: float
) -> None:
    # a prior's points at unknown cores beside jobs on 1-16 cores; the bound on the slope
    # binds for some rows' others and not for others'
    rng = np.random.default_rng(seed)
    xs = np.log(rng.choice([1.0, 2.0, 4.0, 8.0, 16.0], n))
    xs[rng.random(n) < 0.4] = np.nan
    xs[0] = np.nan  # at least one point of the prior
    ys = rng.normal(0.0, 0.5, n) + slope * np.nan_to_num(xs)
    np.testing.assert_allclose(
        Cores().loo(xs, ys), _reference(Cores(), xs, ys), rtol=1e-7, atol=1e-9
    )


def test_the_nearest_others_are_found_across_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from scoutless.sizing import models

    rng = np.random.default_rng(1)
    xs, ys = rng.normal(20.0, 2.0, 50), rng.normal(0.0, 1.0, 50)
    whole = Neighbours().loo(xs, ys)
    monkeypatch.setattr(models, "NEAR_BLOCK", 7)
    np.testing.assert_array_equal(Neighbours().loo(xs, ys), whole)


def _learn(sizer: OnlineSizer, needs: list[float], censored: tuple[int, ...] = ()) -> Features:
    f = Features(request=32 * GB)
    for i, need in enumerate(needs):
        sizer.learn("t", f, Outcome(need, 60.0, censored=i in censored))
    return f


def test_a_learnt_rows_residuals_are_the_current_models_leave_one_out() -> None:
    sizer = OnlineSizer(SizingSettings())
    needs = [5 * GB, 9 * GB, 11 * GB, 10 * GB, 30 * GB, 11 * GB, 10.5 * GB, 12 * GB]
    _learn(sizer, needs, censored=(4,))  # the fifth a kill: its need lies above 30 GB
    state = sizer.types["t"]
    cens = state.censored()
    y = state.column("log_need")
    for model in CANDIDATES:
        loo = model.loo(state.column(model.feature)[~cens], y[~cens])
        np.testing.assert_allclose(state.residuals(model.name)[~cens], loo)
    # the kill keeps its residual as learnt: above the mean of the four outcomes before it
    assert state.residuals("mean")[4] == pytest.approx(np.log(30 * GB) - np.log(needs[:4]).mean())


def test_prequential_keeps_each_residual_as_it_was_learnt() -> None:
    sizer = OnlineSizer(SizingSettings(residuals="prequential"))
    _learn(sizer, [5 * GB, 10 * GB, 10 * GB])
    # the second outcome's residual is its distance from the first, and stays so
    assert sizer.types["t"].residuals("mean")[1] == pytest.approx(np.log(2.0))


def test_a_priors_points_keep_their_shape() -> None:
    sizer = OnlineSizer(SizingSettings())
    points = [1.6 * GB, 1.8 * GB, 2.0 * GB, 2.2 * GB, 2.4 * GB]
    sizer.start_type("t", [Features()] * 5, points, [1.0] * 5, pseudo=True)
    before = sizer.types["t"].residuals("mean").copy()
    _learn(sizer, [0.5 * GB] * 10)
    state = sizer.types["t"]
    np.testing.assert_array_equal(state.residuals("mean")[:5], before)
    loo = CANDIDATES[0].loo(state.column("log_input"), state.column("log_need"))
    np.testing.assert_allclose(state.residuals("mean")[5:], loo[5:])


def test_a_type_started_far_off_is_sized_by_what_its_model_now_knows() -> None:
    """A type's first outcome far below the plateau the rest sit on (a small input, then
    the tool's cap): learnt as they came, the next outcomes' residuals are their distances
    from a mean of the few before (+0.79, +0.39, +0.26 …) and keep the allocation well
    above the plateau; refitted, they are the plateau's own spread."""
    rng = np.random.default_rng(0)
    needs = [5 * GB, *(11 * GB * rng.lognormal(0.0, 0.002, 40))]
    sized = {}
    for mode in ("leave_one_out", "prequential"):
        sizer = OnlineSizer(SizingSettings(residuals=mode, prior_weight=0.0))
        f = _learn(sizer, needs)
        sized[mode] = sizer.first("t", f)
    assert sized["leave_one_out"] < 1.05 * max(needs)
    assert sized["prequential"] > 1.15 * max(needs)
