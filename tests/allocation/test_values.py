"""Value distributions and their split-conformal calibration: the (1 - alpha) value
under-allocates at most alpha on exchangeable held-out rows, however wrong the model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.allocation.values import (
    Z_CAP,
    CalibrationError,
    ConformalLevels,
    ValueDistribution,
    ndtr,
    ndtri,
)
from scoutless.fast_paths import current

#: up to this many values the normal is computed on Python floats, one more: by scipy
SCALAR_MAX = current().scalar_values

def _world(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mu = rng.normal(7.0, 1.0, n)
    sigma = rng.uniform(0.1, 0.8, n)
    return mu, sigma, np.exp(mu + sigma * rng.standard_normal(n))


@settings(max_examples=30, deadline=None)
@given(
    alpha=st.floats(0.02, 0.3),
    shift=st.floats(-1.0, 1.0),
    scale=st.floats(0.3, 3.0),
    seed=st.integers(0, 10_000),
)
def test_calibrated_value_holds_its_bound_on_held_out_rows(alpha, shift, scale, seed):
    rng = np.random.default_rng(seed)
    n_cal, n_test = 2000, 4000
    mu, sigma, y = _world(n_cal + n_test, rng)
    model = ValueDistribution.of(0.0, mu + shift, sigma * scale)  # a wrong model
    cal, test = slice(0, n_cal), slice(n_cal, None)
    levels = ConformalLevels.fit(model.take(cal), y[cal])
    allocated = model.take(test).at_z(levels.z_at(alpha))
    under = float((y[test] > allocated).mean())
    # the bound holds in expectation over the calibration draw; margin: 4 standard
    # deviations of the test share and of the calibration's own coverage, plus 1/(n+1)
    spread = math.sqrt(alpha * (1 - alpha) * (1 / n_test + 1 / n_cal))
    assert under <= alpha + 4 * spread + 1 / (n_cal + 1)


def test_quantile_and_cdf_invert_each_other_with_an_offset():
    dist = ValueDistribution.of(-1.0, [0.0, 2.0, 5.0], [0.5, 0.1, 1.0])
    for level in (0.05, 0.5, 0.95):
        np.testing.assert_allclose(dist.cdf(dist.quantile(level)), level, atol=1e-9)
    np.testing.assert_allclose(dist.median(), np.exp([0.0, 2.0, 5.0]) - 1)
    assert (dist.cdf(-1.0) == 0).all()  # nothing lies at or below the offset


def test_level_is_the_conformal_rank_and_coverage_counts_scores():
    levels = ConformalLevels(np.linspace(-4.9, 4.9, 99))  # n = 99
    # rank ceil(100 · 0.9) = 90: the 90th smallest score
    assert levels.z_at(0.1) == pytest.approx(-4.9 + 89 * 0.1)
    assert float(levels.coverage(levels.z_at(0.1))) == pytest.approx(90 / 100)
    few = ConformalLevels(np.array([0.5, 0.6]))
    assert few.z_at(0.05) == Z_CAP  # too few rows for that alpha: the most that can be given


def test_bad_calibration_is_refused_with_the_reason():
    dist = ValueDistribution.of(0.0, [1.0, 2.0], [1.0, 1.0])
    with pytest.raises(CalibrationError, match="2 distributions"):
        ConformalLevels.fit(dist, np.array([1.0]))
    with pytest.raises(CalibrationError, match="known value"):
        ConformalLevels.fit(dist, np.array([np.nan, np.nan]))
    with pytest.raises(CalibrationError, match="alpha"):
        ConformalLevels(np.array([0.5])).z_at(1.5)


@pytest.mark.parametrize("n", [1, 7, SCALAR_MAX + 1])
def test_the_normals_cdf_and_quantile_equal_scipys_on_floats_and_on_arrays(n):
    """A few values go through Python's floats (no scipy import for one served task), more
    through scipy.special: the same numbers either way, the edges (±inf, 0, 1, NaN) too."""
    from scipy import special

    x = np.concatenate([np.linspace(-38, 38, n), [np.inf, -np.inf, np.nan]])
    np.testing.assert_allclose(ndtr(x), special.ndtr(x), rtol=1e-13, atol=1e-300)
    p = np.concatenate([np.linspace(0, 1, n), [np.nan, -0.5, 1.5, 1e-300, 1 - 1e-16]])
    np.testing.assert_allclose(ndtri(p), special.ndtri(p), rtol=1e-13, atol=1e-15)
    assert float(ndtri(0.95)) == pytest.approx(1.6448536269514722, abs=1e-15)
