"""Temperature scaling recovers a known over-confidence and never changes the argmax."""

from __future__ import annotations

import numpy as np
import pytest

from scoutless.models.temperature import fit_temperature, nll, softmax


def _calibrated(n: int = 20_000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Logits whose softmax is the true class distribution (temperature 1 is right)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2, (n, 4))
    cumulative = softmax(logits).cumsum(axis=1)
    y = (rng.random((n, 1)) > cumulative).sum(axis=1)
    return logits, y


def test_recovers_known_overconfidence():
    logits, y = _calibrated()
    assert fit_temperature(logits * 3.0, y) == pytest.approx(3.0, rel=0.1)
    assert fit_temperature(logits, y) == pytest.approx(1.0, rel=0.1)


def test_scaling_lowers_nll_and_keeps_argmax():
    logits, y = _calibrated(seed=1)
    t = fit_temperature(logits * 0.4, y)
    assert nll(logits * 0.4, y, t) < nll(logits * 0.4, y, 1.0)
    np.testing.assert_array_equal(softmax(logits / t).argmax(1), softmax(logits).argmax(1))


def test_no_rows_means_no_scaling():
    assert fit_temperature(np.zeros((0, 3)), np.zeros(0, dtype=int)) == 1.0
