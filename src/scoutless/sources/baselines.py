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

from scoutless.config import HistorySettings
from scoutless.features.history import HistoryInput, activity_history, target_history


@dataclass(frozen=True)
class UserHistory:
    """Per job, from the same user's jobs that finished before it was submitted."""

    last: np.ndarray  # value of the most recently finished job (NaN: none)
    mean2: np.ndarray  # mean of the two most recently finished (one if only one)
    n_finished: np.ndarray  # how many had finished


def user_history(
    values: np.ndarray, users: np.ndarray, submit_s: np.ndarray, finished_s: np.ndarray,
    cfg: HistorySettings,
) -> UserHistory:  # fmt: skip
    """Look-ahead-free history of one target value per job (the history component's sweep).

    ``submit_s`` and ``finished_s`` are seconds on one clock. Jobs with a NaN value or end
    time never count as history (but still receive their own history); a job without a
    user has none.
    """
    key = HistoryInput(
        np.asarray(users, dtype=object),
        np.asarray(submit_s, dtype=float),
        np.asarray(finished_s, dtype=float),
    )
    stats = target_history(key, np.asarray(values, dtype=float), cfg)
    usable = np.isfinite(np.asarray(values, dtype=float))
    count = activity_history(
        HistoryInput(key.groups, key.submit_s, np.where(usable, key.finished_s, np.nan))
    )["n_finished"]
    return UserHistory(
        last=stats["last"].to_numpy(dtype=float),
        mean2=stats["mean2"].to_numpy(dtype=float),
        n_finished=count.fillna(0.0).to_numpy(dtype=np.int64),
    )


def last2(
    values: np.ndarray, users: np.ndarray, submit_s: np.ndarray, finished_s: np.ndarray,
    cfg: HistorySettings,
) -> np.ndarray:  # fmt: skip
    """Tsafrir's predictor: mean of the user's last two finished jobs (NaN without history)."""
    return user_history(values, users, submit_s, finished_s, cfg).mean2


def user_request(requested: np.ndarray) -> np.ndarray:
    """The user's request as the predicted value; unknown (≤ 0, NaN) becomes NaN."""
    r = np.asarray(requested, dtype=float)
    return np.where(r > 0, r, np.nan)


def with_fallback(primary: np.ndarray, fallback: np.ndarray | None) -> np.ndarray:
    """``primary`` where known, else ``fallback`` (the paper falls back to the request)."""
    if fallback is None:
        return primary
    return np.where(np.isfinite(primary), primary, fallback)
