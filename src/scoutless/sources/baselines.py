"""The estimates batch schedulers use today, computed without looking ahead.

- ``user_request``: what the user asked for (requested time, memory), taken as the value.
- ``last2``: the mean of the same user's two most recently *finished* jobs, counting only
  jobs whose end time is strictly before the new job's submit time (Tsafrir, Etsion,
  Feitelson, "Backfilling using system-generated predictions rather than user runtime
  estimates", IEEE TPDS 18(6), 2007). Like the paper, a user without history falls back to
  their own request (:func:`with_fallback`).

Both work on plain arrays so the same code serves every trace format.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class UserHistory:
    """Per job, from the same user's jobs that finished before it was submitted."""

    last: np.ndarray  # value of the most recently finished job (NaN: none)
    mean2: np.ndarray  # mean of the two most recently finished (one if only one)
    n_finished: np.ndarray  # how many had finished


def user_history(
    values: np.ndarray, users: np.ndarray, submit_s: np.ndarray, finished_s: np.ndarray
) -> UserHistory:
    """Look-ahead-free history of one target value per job.

    ``submit_s`` and ``finished_s`` are seconds on one clock. Jobs with a NaN value or end
    time never count as history (but still receive their own history).
    """
    values = np.asarray(values, dtype=float)
    submit_s = np.asarray(submit_s, dtype=float)
    finished_s = np.asarray(finished_s, dtype=float)
    n = len(values)
    last = np.full(n, np.nan)
    mean2 = np.full(n, np.nan)
    count = np.zeros(n, dtype=np.int64)
    usable = np.isfinite(values) & np.isfinite(finished_s)
    groups = pd.Series(np.arange(n)).groupby(pd.Series(users).fillna("\0missing").to_numpy())
    for idx in groups.indices.values():
        done = idx[usable[idx]]
        if done.size == 0:
            continue
        done = done[np.argsort(finished_s[done], kind="stable")]
        ends, vals = finished_s[done], values[done]
        k = np.searchsorted(ends, submit_s[idx], side="left")  # ends strictly before submit
        prev1 = np.where(k >= 1, vals[np.maximum(k - 1, 0)], np.nan)
        prev2 = np.where(k >= 2, vals[np.maximum(k - 2, 0)], np.nan)
        last[idx] = prev1
        mean2[idx] = np.where(k >= 2, (prev1 + prev2) / 2.0, prev1)
        count[idx] = k
    return UserHistory(last=last, mean2=mean2, n_finished=count)


def last2(
    values: np.ndarray, users: np.ndarray, submit_s: np.ndarray, finished_s: np.ndarray
) -> np.ndarray:
    """Tsafrir's predictor: mean of the user's last two finished jobs (NaN without history)."""
    return user_history(values, users, submit_s, finished_s).mean2


def user_request(requested: np.ndarray) -> np.ndarray:
    """The user's request as the predicted value; unknown (≤ 0, NaN) becomes NaN."""
    r = np.asarray(requested, dtype=float)
    return np.where(r > 0, r, np.nan)


def with_fallback(primary: np.ndarray, fallback: np.ndarray | None) -> np.ndarray:
    """``primary`` where known, else ``fallback`` (the paper falls back to the request)."""
    if fallback is None:
        return primary
    return np.where(np.isfinite(primary), primary, fallback)
