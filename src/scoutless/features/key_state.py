"""One key's running summary, as the online history-feature store keeps it: fed finished
jobs one by one, it gives the same features the batch sweep (``features/history.py``)
computes for a job submitted after all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scoutless.config import HistorySettings
from scoutless.features.encoders import signed_log1p
from scoutless.features.history import REQUEST_STATS, TARGET_STATS
from scoutless.features.running_stats import (
    EW_EMPTY,
    ew_moments,
    ew_step,
    latest_quantiles,
    mean_of_last2,
)


@dataclass
class KeyState:
    """One key's finished-job summary for one target: what the online store keeps.

    Fed finished jobs in end-time order (:meth:`add`), it yields the same features as
    :func:`history_features` for a job submitted after all of them (:meth:`features`).
    The ``""`` target holds the key's activity (finished count, last end, last submit).
    """

    n: int = 0
    last_end_s: float = float("nan")
    last_submit_s: float = float("nan")
    recent: list[float] = field(default_factory=list)
    ew: tuple[float, float, float] = EW_EMPTY
    ratio_ew: tuple[float, float, float] = EW_EMPTY
    last2_err_ew: tuple[float, float, float] = EW_EMPTY
    request_err_ew: tuple[float, float, float] = EW_EMPTY

    def add(self, value: float, end_s: float, request: float, cfg: HistorySettings) -> None:
        """One finished job (value NaN: counts only for activity)."""
        self.n += 1
        self.last_end_s = end_s if not end_s < self.last_end_s else self.last_end_s
        if not np.isfinite(value):
            return
        decay = 0.5 ** (1.0 / cfg.ewm_halflife_jobs)
        logv = float(signed_log1p(np.float64(value)))
        if self.recent:  # what last-2 would have said for this job, and how wrong it was
            predicted = signed_log1p(np.float64(mean_of_last2(self.recent)))
            self.last2_err_ew = ew_step(self.last2_err_ew, abs(logv - float(predicted)), decay)
        self.recent = [*self.recent, float(value)][-cfg.last_k :]
        self.ew = ew_step(self.ew, logv, decay)
        if value > 0 and request > 0:
            self.ratio_ew = ew_step(self.ratio_ew, float(np.log(value / request)), decay)
            error = abs(logv - float(signed_log1p(np.float64(request))))
            self.request_err_ew = ew_step(self.request_err_ew, error, decay)

    def submitted(self, submit_s: float) -> None:
        if not submit_s <= self.last_submit_s:
            self.last_submit_s = submit_s

    def activity(self, submit_s: float) -> dict[str, float]:
        return {
            "n_finished": float(self.n),
            "since_last_finish_s": submit_s - self.last_end_s,
            "since_last_submit_s": submit_s - self.last_submit_s,
        }

    def features(self, request: float, cfg: HistorySettings) -> dict[str, float]:
        """TARGET_STATS (and REQUEST_STATS): NaN where no job has finished."""
        nan = float("nan")
        if not self.recent:
            return dict.fromkeys(TARGET_STATS + REQUEST_STATS, nan)
        mean, spread = ew_moments(self.ew)
        q = latest_quantiles(self.recent, cfg.last_k, cfg.quantiles)
        ratio = ew_moments(self.ratio_ew)[0]
        return {
            "last": self.recent[-1],
            "mean2": mean_of_last2(self.recent),
            "ewm": float(np.expm1(mean)),
            "ewsd": spread,
            "qlo": float(q[0]), "qmid": float(q[1]), "qhi": float(q[2]),
            "ratio_ewm": ratio,
            "request_scaled": request * float(np.exp(ratio)) if request > 0 else nan,
            "last2_err": ew_moments(self.last2_err_ew)[0],
            "request_err": ew_moments(self.request_err_ew)[0],
        }  # fmt: skip
