"""Weighted quantiles: the least value at or below which a share of the probability lies.

One definition for the cost-aware allocation (a row per task of its jobs' needs) and for
online sizing (one weighted sample, :mod:`scoutless.sizing`).
"""

from __future__ import annotations

import numpy as np

#: most elements of weighted_quantiles' one comparison of every value with every level
_BROADCAST_MAX = 1 << 20


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """(c, l) per row of ``values`` (c, p) with probabilities ``weights`` (p,), the least
    value at or below which at least ``level`` of the probability lies: a candidate is a
    need itself, so at most 1 - level of the needs lie above it.

    Rows already in order (a task's grid of quantiles, every job at the task's value) are
    their own ranking: every row then has the same cumulative weights and the same
    columns, read once (what the sort gives: a stable sort keeps a sorted row as it is)."""
    if rows_in_order(values):
        return values[:, sorted_columns(weights, levels, values.shape[1])]
    return _sorting_quantiles(values, weights, np.asarray(levels, dtype=float) - 1e-12)


def rows_in_order(values: np.ndarray) -> bool:
    """Whether every row of ``values`` is non-decreasing (NaN is not in order); the
    reduction ``ndarray.all`` makes, without its Python wrapper (per served request)."""
    rising = values[:, 1:] >= values[:, :-1]
    return values.shape[1] > 1 and bool(np.logical_and.reduce(rising, None))


def sorted_columns(weights: np.ndarray, levels: np.ndarray, p: int) -> np.ndarray:
    """(l,) the column holding each level's quantile in rows already in order."""
    bounds = np.asarray(levels, dtype=float) - 1e-12
    return np.minimum((np.cumsum(weights)[:, None] < bounds).sum(axis=0), p - 1)


def _sorting_quantiles(values: np.ndarray, weights: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """:func:`weighted_quantiles` of rows in any order (``bounds``: the levels less 1e-12)."""
    order = np.argsort(values, axis=1, kind="stable")
    ranked = np.take_along_axis(values, order, axis=1)
    cumulative = np.cumsum(weights[order], axis=1)
    if cumulative.size * len(bounds) <= _BROADCAST_MAX:  # one comparison for every level
        at = (cumulative[:, :, None] < bounds).sum(axis=1)
    else:
        at = np.stack([(cumulative < b).sum(axis=1) for b in bounds], axis=1)
    return np.take_along_axis(ranked, np.minimum(at, values.shape[1] - 1), axis=1)


def sample_quantiles(values: np.ndarray, weights: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """(l,) :func:`weighted_quantiles` of one sample ``values`` (p,) with non-negative
    ``weights`` (p,) of any positive total: the inverse of its weighted empirical
    distribution at ``levels`` (no interpolation). One row: each level's column found by
    bisecting the cumulative weights (the count of those below it, as the broadcast
    comparison of many rows counts them)."""
    w = weights / weights.sum()
    if rows_in_order(values[None, :]):
        return ranked_quantiles(values, w, levels)
    order = np.argsort(values, kind="stable")
    return ranked_quantiles(values[order], w[order], levels)


def ranked_quantiles(ranked: np.ndarray, probabilities: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """(l,) :func:`sample_quantiles` of a sample already in ascending order (ties in the
    order a stable sort leaves them) with ``probabilities`` summing to 1 in that order."""
    bounds = np.asarray(levels, dtype=float) - 1e-12
    at = np.searchsorted(np.cumsum(probabilities), bounds, side="left")
    return ranked[np.minimum(at, len(ranked) - 1)]
