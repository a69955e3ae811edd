"""The median's bootstrap interval over workflow-seed cells, on known distributions."""

from __future__ import annotations

import numpy as np
import pytest

from scoutless.sizing.report import median_interval


def test_equal_cells_have_a_point_interval() -> None:
    assert median_interval([0.4] * 60) == {"median": 0.4, "low": 0.4, "high": 0.4, "level": 0.95}


def test_the_interval_of_a_uniform_sample_matches_the_medians_sampling_spread() -> None:
    # the median of n uniforms has sd ≈ 1 / (2 √n): with n = 400, ±1.96 sd ≈ ±0.049
    values = np.random.default_rng(1).uniform(0, 1, 400)
    out = median_interval(values, draws=4000)
    assert out["low"] < out["median"] < out["high"]
    assert out["low"] < 0.5 < out["high"]
    assert out["high"] - out["low"] == pytest.approx(2 * 1.96 / (2 * np.sqrt(400)), rel=0.3)


def test_the_interval_covers_the_true_median_about_as_often_as_its_level() -> None:
    rng = np.random.default_rng(2)
    covered = [
        (o := median_interval(rng.exponential(1.0, 60), draws=1000, seed=i))["low"]
        <= np.log(2) <= o["high"]
        for i in range(200)
    ]
    assert 0.88 <= np.mean(covered) <= 0.99
