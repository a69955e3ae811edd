"""One distribution per answer: the classes' masses, the value model's shape within a class.

A bundle answers a target with two models: the classifier's class probabilities and the
value model's distribution (:class:`~scoutless.allocation.values.ValueDistribution`). They
are fitted apart and can disagree (the value model puts a task's need at 300 while the
classifier gives 0.4 to ``>1000``). The answer's ``p_sufficient`` is read from one
distribution made of both:

    F(v) = P(class < c) + P(class = c) · W(v),    c the class holding v,

where ``W(v)`` is where ``v`` sits inside its class under the value model,
``(G(v) - G(lo)) / (G(hi) - G(lo))`` (G the value model's CDF, ``(lo, hi]`` the class).
Where the value model puts (almost) nothing in the class, ``W`` falls back to ``v``'s place
in the class on the ``log1p`` scale (halfway in an open class), blended smoothly by
``_PRIOR_MASS``. F is a proper CDF whose class masses are exactly the classifier's, so
``P(class < c) <= F(v) <= P(class <= c)`` holds for every answer, by construction.
"""

from __future__ import annotations

import numpy as np

from scoutless.allocation.values import ValueDistribution

#: value-model mass below which a class's inside is read from the value's place in it
_PRIOR_MASS = 1e-3


def place_in_class(value: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(n,) where each value sits in its class (lo, hi] on the log1p scale, in [0, 1];
    0.5 in an open class (``hi`` infinite)."""
    low = np.log1p(np.maximum(lo, 0.0))
    with np.errstate(invalid="ignore", over="ignore"):
        span = np.log1p(np.maximum(hi, 0.0)) - low
        place = (np.log1p(np.maximum(value, 0.0)) - low) / np.where(span > 0, span, np.nan)
    return np.where(np.isfinite(hi), np.where(np.isnan(place), 1.0, place), 0.5).clip(0.0, 1.0)


def sufficient_probability(
    proba: np.ndarray, edges: np.ndarray, classes: np.ndarray, dist: ValueDistribution,
    value: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """(n,) F(value): P(need <= value) under the answer's one distribution.

    ``proba`` (n, K) the class probabilities, ``edges`` (K + 1,) the class edges, ``classes``
    (n,) the class holding each ``value`` (n,), ``dist`` the value model's distribution."""
    proba = np.asarray(proba, dtype=float)
    n = len(proba)
    if not len(dist) == len(value) == len(classes) == n:
        raise ValueError(
            f"{n} probability rows, {len(classes)} classes, {len(value)} values and "
            f"{len(dist)} distributions: one of each per task"
        )
    rows = np.arange(n)
    c = np.minimum(np.maximum(np.asarray(classes, dtype=int), 0), proba.shape[1] - 1)  # clip
    edges = np.asarray(edges, dtype=float)
    # one pass over four rows, each equal to its own call: the value capped at its class's
    # top, the class's bounds, the value (the three CDFs read rows 0-2, the places 1-3)
    at = np.empty((4, n))
    at[1], at[2], at[3] = edges[c], edges[c + 1], value
    np.minimum(at[3], at[2], out=at[0])
    g_v, g_lo, g_hi = dist.cdf_rows(at[:3])
    inside = (g_v - g_lo + _PRIOR_MASS * _places(at[1:])) / (g_hi - g_lo + _PRIOR_MASS)
    mass = proba[rows, c]
    below = np.cumsum(proba, axis=1)[rows, c] - mass
    return (below + mass * inside.clip(0.0, 1.0)).clip(0.0, 1.0)


def _places(bounds_and_value: np.ndarray) -> np.ndarray:
    """:func:`place_in_class` of rows (lo, hi, value), the three ``log1p`` in one call."""
    low, top, at = np.log1p(np.maximum(bounds_and_value, 0.0))
    hi = bounds_and_value[1]
    with np.errstate(invalid="ignore", over="ignore"):
        span = top - low
        place = (at - low) / np.where(span > 0, span, np.nan)
    return np.where(np.isfinite(hi), np.where(np.isnan(place), 1.0, place), 0.5).clip(0.0, 1.0)
