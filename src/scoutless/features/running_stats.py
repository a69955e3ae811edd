"""The running statistics behind the history features, in two forms that give the same
numbers: vectorised over a sorted sweep of many keys' events (restarting at each key's run:
:func:`ewm_moments`, :func:`last_k_quantiles`, :func:`last2_errors`) and step by step in
plain floats for one key of the online store (:func:`ew_step`, :func:`latest_quantiles`,
:func:`mean_of_last2`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from scoutless.features.encoders import signed_log1p


def group_starts(codes: np.ndarray) -> np.ndarray:
    """Per event (sorted by code), the position where its code's run begins."""
    n = len(codes)
    new = np.ones(n, dtype=bool)
    new[1:] = codes[1:] != codes[:-1]
    return np.maximum.accumulate(np.where(new, np.arange(n), 0))


def ewm_moments(codes: np.ndarray, x: np.ndarray, halflife: float) -> tuple[np.ndarray, np.ndarray]:
    """Exponentially weighted mean and spread per event, restarting at each code's run.

    Weights ``0.5 ** (age / halflife)`` over the run's events so far (age 0: this one).
    """
    decay = 0.5 ** (1.0 / halflife)
    mean = np.empty(len(x))
    spread = np.empty(len(x))
    state = EW_EMPTY
    previous = None
    for i, (code, value) in enumerate(zip(codes.tolist(), x.tolist(), strict=True)):
        if code != previous:
            state, previous = EW_EMPTY, code
        state = ew_step(state, value, decay)
        mean[i], spread[i] = ew_moments(state)
    return mean, spread


#: Exponentially weighted sums (Σw·x, Σw·x², Σw) of no event.
EW_EMPTY: tuple[float, float, float] = (0.0, 0.0, 0.0)


def ew_step(
    state: tuple[float, float, float], x: float, decay: float
) -> tuple[float, float, float]:
    """Age every earlier event by one (× decay) and add ``x`` with weight 1."""
    s, s2, w = state
    return decay * s + x, decay * s2 + x * x, decay * w + 1.0


def ew_moments(state: tuple[float, float, float]) -> tuple[float, float]:
    """(mean, spread) of the weighted sums; NaN without events."""
    s, s2, w = state
    if w == 0.0:
        return float("nan"), float("nan")
    m = s / w
    return m, max(s2 / w - m * m, 0.0) ** 0.5


def last_k_quantiles(
    codes: np.ndarray, x: np.ndarray, k: int, quantiles: Sequence[float]
) -> np.ndarray:
    """(n, len(quantiles)) quantiles of each code's last ``k`` events up to each event."""
    n = len(x)
    if n == 0:
        return np.empty((0, len(quantiles)))
    idx = np.arange(n)[:, None] - np.arange(k)[None, :]
    inside = idx >= group_starts(codes)[:, None]
    window = np.sort(np.where(inside, x[idx.clip(min=0)], np.nan), axis=1)  # NaN last
    count = inside.sum(axis=1)
    rows = np.arange(n)
    out = np.empty((n, len(quantiles)))
    for j, q in enumerate(quantiles):  # linear interpolation, as numpy's default
        position = q * (count - 1)
        lo = np.floor(position).astype(np.int64)
        hi = np.minimum(lo + 1, count - 1)
        low, high = window[rows, lo], window[rows, hi]
        out[:, j] = low + (high - low) * (position - lo)
    return out


def latest_quantiles(values: Sequence[float], k: int, quantiles: Sequence[float]) -> list[float]:
    """:func:`last_k_quantiles` of the latest event of one run of ``values`` in plain floats
    (the same operations, so the same numbers): the store's one-key path, without numpy's
    per-call cost for a window of a few values."""
    window = sorted(values[-k:])
    top = len(window) - 1
    out = []
    for q in quantiles:
        position = q * top
        lo = math.floor(position)
        low, high = window[lo], window[min(lo + 1, top)]
        out.append(low + (high - low) * (position - lo))
    return out


def mean_of_last2(values: Sequence[float]) -> float:
    """The mean of the last two values in plain floats (no numpy per-call cost), as
    training's vectorised path takes it: the sum of the halves (equal to (a + b) / 2 but
    finite for two values near a float's top, whose sum overflows)."""
    if len(values) > 1:
        return values[-2] / 2.0 + values[-1] / 2.0
    return values[-1] / 1.0


def ewm_mean_of_finite(codes: np.ndarray, x: np.ndarray, halflife: float) -> np.ndarray:
    """Per event, the EW mean of its code's finite ``x`` so far (NaN events are skipped;
    NaN before the code's first finite one)."""
    finite = np.isfinite(x)
    mean = np.full(len(x), np.nan)
    mean[finite] = ewm_moments(codes[finite], x[finite], halflife)[0]
    return pd.Series(mean).groupby(codes, sort=False).ffill().to_numpy()


def last2_errors(codes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per event (sorted by code, end), last-2's absolute ``log1p`` error on it: the mean
    of the code's two previous events as the prediction (NaN for a code's first)."""
    shifted = pd.Series(values).groupby(codes, sort=False)
    previous, before = shifted.shift(1).to_numpy(), shifted.shift(2).to_numpy()
    predicted = np.where(np.isfinite(before), previous / 2.0 + before / 2.0, previous)
    return np.abs(signed_log1p(values) - signed_log1p(predicted))
