"""Every split scoutless makes, in one place: train/test by time or at random, and the
fit / validation / calibration parts inside the training rows.

All three share one count rule: a fraction ``f`` of ``n`` rows puts ``ceil(f * n)`` rows in
the held-out side (scikit-learn's rule), so a random and a time split have equal sizes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from sklearn.model_selection import train_test_split

TRAIN, TEST = "train", "test"


def n_test_rows(n: int, test_fraction: float) -> int:
    """Rows held out of ``n`` for a test fraction (at least one when there are two rows)."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"{test_fraction=} must be between 0 and 1")
    return min(n - 1, math.ceil(test_fraction * n)) if n >= 2 else 0


def time_split(order: np.ndarray, test_fraction: float) -> np.ndarray:
    """'test' for the latest ``test_fraction`` of rows by ``order`` (ties: row order)."""
    order = np.asarray(order)
    rank = np.argsort(order, kind="stable")
    split = np.full(len(order), TRAIN, dtype=object)
    n_test = n_test_rows(len(order), test_fraction)
    if n_test:
        split[rank[-n_test:]] = TEST
    return split


def random_split(
    n: int, *, seed: int, test_fraction: float, strata: np.ndarray | None = None
) -> np.ndarray:
    """'train'/'test' per row at random, stratified on ``strata`` when every stratum has two
    rows or more (otherwise, or when scikit-learn cannot stratify, plain random)."""
    split = np.full(n, TRAIN, dtype=object)
    if n < 2:
        return split
    index = np.arange(n)
    if strata is not None and np.unique(strata, return_counts=True)[1].min() < 2:
        strata = None
    try:
        _, test = train_test_split(
            index, test_size=test_fraction, random_state=seed, stratify=strata
        )
    except ValueError:  # too few rows per class to stratify: plain random split
        _, test = train_test_split(index, test_size=test_fraction, random_state=seed)
    split[test] = TEST
    return split


def assign_parts(strata: np.ndarray, fractions: Mapping[str, float], seed: int) -> np.ndarray:
    """Part name per row, each stratum split by ``fractions`` (rows shuffled with ``seed``).

    Works for strata of any size: a stratum of one row goes to the first part.
    """
    rng = np.random.default_rng(seed)
    names = np.array(list(fractions), dtype=object)
    cuts = np.cumsum(list(fractions.values()))
    cuts = cuts / cuts[-1]
    parts = np.empty(len(strata), dtype=object)
    _, inverse = np.unique(strata, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for group in np.unique(inverse):
        rows = rng.permutation(np.flatnonzero(inverse == group))
        position = (np.arange(len(rows)) + 0.5) / len(rows)
        parts[rows] = names[np.searchsorted(cuts, position, side="right").clip(0, len(names) - 1)]
    return parts


def forward_parts(order: np.ndarray, fractions: Mapping[str, float], seed: int) -> np.ndarray:
    """Part name per row for time-ordered data: the first part takes the earliest rows, the
    other parts share the latest rows (interleaved with ``seed``).

    Validation then looks one step ahead of what the models were fitted on, as deployment
    does: on a log whose class mix shifts, a model that only memorised its window shows it.
    """
    names = list(fractions)
    shares = np.asarray(list(fractions.values()), dtype=float)
    shares = shares / shares.sum()
    ranked = np.argsort(np.asarray(order), kind="stable")
    n_first = math.ceil(len(ranked) * shares[0])
    parts = np.empty(len(ranked), dtype=object)
    parts[ranked[:n_first]] = names[0]
    later = np.random.default_rng(seed).permutation(ranked[n_first:])
    rest = assign_parts(np.zeros(len(later)), dict(zip(names[1:], shares[1:], strict=True)), seed)
    parts[later] = rest
    return parts
