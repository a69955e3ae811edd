"""How far a model's confidence is from its accuracy: ECE and reliability diagrams.

Both use the top-label view: a row's confidence is its largest probability, and it is
right when that class is the true one. Bins are equal-width over [0, 1].
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _top_label(proba: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    proba = np.asarray(proba, dtype=float)
    y = np.asarray(y, dtype=np.int64)
    if proba.ndim != 2 or proba.shape[0] != y.shape[0]:
        raise ValueError(f"proba shape {proba.shape} does not match {y.shape[0]} labels")
    return proba.max(axis=1), proba.argmax(axis=1) == y


def _bin_index(confidence: np.ndarray, n_bins: int) -> np.ndarray:
    if n_bins < 1:
        raise ValueError(f"{n_bins=} must be positive")
    # (k/n, (k+1)/n] per bin; confidence 0 goes to the first bin
    return np.clip(np.ceil(confidence * n_bins).astype(np.int64) - 1, 0, n_bins - 1)


def expected_calibration_error(proba: np.ndarray, y: np.ndarray, n_bins: int = 15) -> float:
    """Sum over bins of |accuracy - mean confidence|, weighted by the bin's share of rows."""
    confidence, correct = _top_label(proba, y)
    if confidence.size == 0:
        return float("nan")
    bins = _bin_index(confidence, n_bins)
    conf_sum = np.bincount(bins, weights=confidence, minlength=n_bins)
    hit_sum = np.bincount(bins, weights=correct.astype(float), minlength=n_bins)
    return float(np.abs(hit_sum - conf_sum).sum() / confidence.size)


def reliability_curve(proba: np.ndarray, y: np.ndarray, n_bins: int = 10) -> dict[str, Any]:
    """Per non-empty bin: mean confidence, accuracy and row count (for the diagram)."""
    confidence, correct = _top_label(proba, y)
    bins = _bin_index(confidence, n_bins)
    count = np.bincount(bins, minlength=n_bins)
    conf_sum = np.bincount(bins, weights=confidence, minlength=n_bins)
    hit_sum = np.bincount(bins, weights=correct.astype(float), minlength=n_bins)
    used = count > 0
    return {
        "confidence": (conf_sum[used] / count[used]).tolist(),
        "accuracy": (hit_sum[used] / count[used]).tolist(),
        "count": count[used].astype(int).tolist(),
        "n_bins": n_bins,
    }
