"""The ordinal head's forward pass in numpy (:class:`~scoutless.models.ordinal.CumulativeLinkHead`
in eval mode), and the constants both passes share. Imports neither torch nor, for a few
rows, scipy: a served task is one row, and loading a bundle should not pay for either.
"""

from __future__ import annotations

import math

import numpy as np

from scoutless.fast_paths import current

#: log-scale bounds keep the slopes finite while training
LOG_SCALE_BOUNDS = (-4.0, 4.0)
EPS = 1e-7
SQRT1_2 = 0.7071067811865476



def cumulative_link_log_proba(
    location: np.ndarray, log_scale: np.ndarray, cuts: np.ndarray
) -> np.ndarray:
    """The head's forward pass in numpy: (n,) location and log-scale, (K - 1,) cuts."""
    if len(location) <= current().head_rows:
        return _log_proba_rows(location, log_scale, cuts)
    from scipy.special import ndtr  # batches only: scipy.special is slow to import

    scale = np.exp(np.clip(log_scale, *LOG_SCALE_BOUNDS))
    z = (cuts[None, :] - location[:, None]) / scale[:, None]
    # Phi at each class's lower and upper cut (Phi(-inf) = 0, Phi(inf) = 1), each cut's Phi
    # computed once; above 0 the upper tails are differenced instead, for their precision
    zero, one = np.zeros((len(z), 1), z.dtype), np.ones((len(z), 1), z.dtype)
    below = np.hstack([zero, ndtr(z), one])
    above = np.hstack([one, ndtr(-z), zero])
    lower_positive = np.hstack([zero.astype(bool), z > 0])
    proba = np.where(lower_positive, above[:, :-1] - above[:, 1:], below[:, 1:] - below[:, :-1])
    return np.log(np.maximum(proba, EPS, out=proba), out=proba)


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x * SQRT1_2)


def _log_proba_rows(location: np.ndarray, log_scale: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """:func:`cumulative_link_log_proba` row by row on Python floats, for a single task's
    request: the same formula in float64, so within float32 rounding of the numpy pass."""
    low, high = LOG_SCALE_BOUNDS
    cut_list = cuts.tolist()
    rows = []
    for mu, log_s in zip(location.tolist(), log_scale.tolist(), strict=True):
        scale = math.exp(min(max(log_s, low), high))
        z = [(c - mu) / scale for c in cut_list]
        below = [0.0, *map(_phi, z), 1.0]
        above = [1.0, *(_phi(-v) for v in z), 0.0]
        lower = [-math.inf, *z]
        proba = [
            above[k] - above[k + 1] if lower[k] > 0 else below[k + 1] - below[k]
            for k in range(len(z) + 1)
        ]
        rows.append([math.log(max(p, EPS)) for p in proba])
    return np.asarray(rows, dtype=np.result_type(location, cuts)).reshape(
        len(rows), len(cut_list) + 1
    )
