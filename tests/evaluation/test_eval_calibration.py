import numpy as np
import pytest

from scoutless.evaluation.calibration import expected_calibration_error, reliability_curve


def _rows(confidence: float, n: int, n_right: int) -> tuple[np.ndarray, np.ndarray]:
    proba = np.tile([confidence, 1 - confidence], (n, 1))
    y = np.r_[np.zeros(n_right, int), np.ones(n - n_right, int)]
    return proba, y


def test_ece_is_zero_when_confidence_matches_accuracy():
    proba, y = _rows(0.8, 100, 80)
    assert expected_calibration_error(proba, y) == pytest.approx(0.0, abs=1e-12)


def test_ece_of_an_overconfident_model():
    proba, y = _rows(0.9, 100, 50)
    assert expected_calibration_error(proba, y) == pytest.approx(0.4)


def test_ece_weights_bins_by_rows():
    p1, y1 = _rows(0.9, 30, 27)  # calibrated
    p2, y2 = _rows(0.6, 70, 35)  # 0.1 off
    ece = expected_calibration_error(np.r_[p1, p2], np.r_[y1, y2])
    assert ece == pytest.approx(0.7 * 0.1)


def test_reliability_curve_keeps_non_empty_bins():
    p1, y1 = _rows(0.95, 10, 9)
    p2, y2 = _rows(0.55, 30, 12)
    curve = reliability_curve(np.r_[p1, p2], np.r_[y1, y2], n_bins=10)
    assert curve["count"] == [30, 10]
    assert curve["confidence"] == pytest.approx([0.55, 0.95])
    assert curve["accuracy"] == pytest.approx([0.4, 0.9])


def test_shape_mismatch_is_refused():
    with pytest.raises(ValueError, match="does not match"):
        expected_calibration_error(np.ones((3, 2)) / 2, np.zeros(4, int))
