"""Margins for tests that compare a measured share (an accuracy, a rate) with a threshold.

A share measured on n rows scatters by its binomial standard deviation; a test that holds by
less than a few of them passes or fails by luck (and by library version). Tests assert with
``MARGIN_SD`` of these, and say so.
"""

from __future__ import annotations

import math

import numpy as np

#: standard deviations a compared share keeps from its threshold (one-sided: < 1 in 30,000)
MARGIN_SD = 4.0


def binomial_sd(p: float, n: int) -> float:
    """Spread of a share measured on ``n`` rows, each counted with chance ``p``."""
    return math.sqrt(max(p * (1 - p), 1e-4) / max(n, 1))


def gap_sd(p1: float, n1: int, p2: float, n2: int) -> float:
    """Spread of the difference of two shares measured on independent rows."""
    return math.hypot(binomial_sd(p1, n1), binomial_sd(p2, n2))


def paired_gap_sd(right_a: np.ndarray, right_b: np.ndarray) -> float:
    """Spread of accuracy(a) - accuracy(b) measured on the same rows (``right_*``: booleans):
    only the rows where exactly one of them is right move the difference."""
    n = len(right_a)
    disagree = float(np.mean(np.asarray(right_a) != np.asarray(right_b)))
    return math.sqrt(max(disagree, 1.0 / n) / n)
