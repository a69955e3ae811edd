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

import functools
from collections.abc import Sequence

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


#: one target's reading: ``proba`` (n, K) the class probabilities, ``edges`` (K + 1,) the
#: class edges, ``classes`` (n,) the class holding each ``value`` (n,), ``dist`` the value
#: model's distribution
Reading = tuple[np.ndarray, np.ndarray, np.ndarray, ValueDistribution, np.ndarray]


def sufficient_probability(
    proba: np.ndarray, edges: np.ndarray, classes: np.ndarray, dist: ValueDistribution,
    value: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """(n,) F(value): P(need <= value) under the answer's one distribution.

    ``proba`` (n, K) the class probabilities, ``edges`` (K + 1,) the class edges, ``classes``
    (n,) the class holding each ``value`` (n,), ``dist`` the value model's distribution."""
    return sufficient_probabilities([(proba, edges, classes, dist, value)])[0]


def sufficient_probabilities(readings: Sequence[Reading]) -> list[np.ndarray]:
    """:func:`sufficient_probability` of several targets' readings of the same n tasks, in
    one pass: every step is element by element (the probabilities padded with zeros to the
    widest target's classes: a running sum reads the same up to a task's class), so each
    target's numbers are those of its own call, with a few dozen numpy calls in all rather
    than per target (a served request reads four)."""
    if not readings:
        return []
    probas = [np.asarray(r[0], dtype=float) for r in readings]
    n = len(probas[0])
    for proba, (_, _, classes, dist, value) in zip(probas, readings, strict=True):
        if not len(dist) == len(value) == len(classes) == len(proba) == n:
            raise ValueError(
                f"{len(proba)} probability rows, {len(classes)} classes, {len(value)} values "
                f"and {len(dist)} distributions: one of each per task, {n} tasks per target"
            )
    widths = tuple(p.shape[1] for p in probas)
    edges = tuple(tuple(np.asarray(r[1], dtype=float).tolist()) for r in readings)
    top, first, every_edge = _layout(widths, edges, n)
    c = np.minimum(np.maximum(np.concatenate([r[2] for r in readings]).astype(int), 0), top)
    padded = np.zeros((len(top), max(widths)))
    for i, (proba, width) in enumerate(zip(probas, widths, strict=True)):
        padded[i * n : (i + 1) * n, :width] = proba
    # four rows, each equal to its own call: the value capped at its class's top, the
    # class's bounds, the value (the three CDFs read rows 0-2, the places 1-3)
    at = np.empty((4, len(top)))
    at[1], at[2] = every_edge[first + c], every_edge[first + c + 1]
    at[3] = np.concatenate([r[4] for r in readings])
    np.minimum(at[3], at[2], out=at[0])
    dists = [r[3] for r in readings]
    stacked = ValueDistribution(*(np.concatenate([getattr(d, k) for d in dists])
                                  for k in ("offset", "mu", "sigma")))  # fmt: skip
    g_v, g_lo, g_hi = stacked.cdf_rows(at[:3], size=n)
    inside = (g_v - g_lo + _PRIOR_MASS * _places(at[1:])) / (g_hi - g_lo + _PRIOR_MASS)
    rows = np.arange(len(top))
    mass = padded[rows, c]
    below = np.add.accumulate(padded, axis=1)[rows, c] - mass  # np.cumsum, sans wrapper
    out = (below + mass * inside.clip(0.0, 1.0)).clip(0.0, 1.0)
    return [out[i * n : (i + 1) * n] for i in range(len(readings))]


@functools.lru_cache(maxsize=256)
def _layout(
    widths: tuple[int, ...], edges: tuple[tuple[float, ...], ...], n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per task and target (target-major): the last class, the first edge's place among
    every target's edges laid end to end; and those edges (made once per bins and size:
    a served request asks for the same every time)."""
    top = np.repeat(np.asarray(widths, dtype=np.int64) - 1, n)
    first = np.repeat(np.cumsum([0, *(len(e) for e in edges[:-1])]), n)
    every_edge = np.concatenate([np.asarray(e, dtype=float) for e in edges])
    for a in (top, first, every_edge):
        a.flags.writeable = False
    return top, first, every_edge


def _places(bounds_and_value: np.ndarray) -> np.ndarray:
    """:func:`place_in_class` of rows (lo, hi, value), the three ``log1p`` in one call."""
    low, top, at = np.log1p(np.maximum(bounds_and_value, 0.0))
    hi = bounds_and_value[1]
    with np.errstate(invalid="ignore", over="ignore"):
        span = top - low
        place = (at - low) / np.where(span > 0, span, np.nan)
    return np.where(np.isfinite(hi), np.where(np.isnan(place), 1.0, place), 0.5).clip(0.0, 1.0)
