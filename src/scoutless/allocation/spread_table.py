"""The spread of a task's jobs around its value, per task kind: what a decision learns from
a history's jobs and a bundle carries, so that the service (which sees one task at
submission, no jobs) prices the same spread the replay learnt.

Per allocated target and kind (``processingtype``; "unknown" where unset), the factors of
one job's need over its task's value at the strata of :func:`spread_strata`; a kind with
too few measured jobs, and a kind the table never saw, takes every kind's (``ANY``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from scoutless.allocation.values import JobSpread, spread_strata
from scoutless.fast_paths import current

#: the submission feature that names a task's kind
KIND_FEATURE = "processingtype"
#: the factors of every kind together
ANY = "*"
#: the kind of a task whose kind is unset (as a replay's workload names it)
UNKNOWN_KIND = "unknown"


@dataclass(frozen=True)
class SpreadTable:
    """Per target, per kind, ``s`` factors (their probabilities ``weights``, (s,))."""

    weights: np.ndarray
    factors: Mapping[str, Mapping[str, np.ndarray]]

    @classmethod
    def learn(
        cls,
        ratios: Mapping[str, np.ndarray],
        job_kind: np.ndarray,
        points: int = 8,
        min_jobs: int = 50,
    ) -> SpreadTable:
        """From each target's jobs' ``ratios`` (a job's need ÷ its task's value; NaN: not
        measured) and each job's kind: a kind's ratios at ``points`` strata (jobs weigh
        alike: the cost is per job), every kind's where it has fewer than ``min_jobs``."""
        levels, weights = spread_strata(points)
        job_kind = np.asarray(job_kind, dtype=object)
        table: dict[str, dict[str, np.ndarray]] = {}
        for target, values in ratios.items():
            values = np.asarray(values, dtype=float)
            ok = np.isfinite(values) & (values > 0)
            per_kind = {ANY: np.quantile(values[ok], levels) if ok.any() else np.ones(points)}
            for kind in np.unique(job_kind[ok]).tolist():
                mine = ok & (job_kind == kind)
                if mine.sum() >= min_jobs:
                    per_kind[str(kind)] = np.quantile(values[mine], levels)
            table[target] = per_kind
        return cls(weights, table)

    def spread(self, target: str, kinds: Sequence[Any] | np.ndarray) -> JobSpread | None:
        """Per task (of kind ``kinds``) its jobs' spread of ``target`` (None: the table has
        no such target: every job needs the task's value)."""
        per_kind = self.factors.get(target)
        if per_kind is None:
            return None
        if not len(kinds):
            return JobSpread(np.ones((0, len(self.weights))), self.weights)
        if len(kinds) <= current().few_tasks:  # a served request: no pandas calls
            rows = [per_kind.get(_kind_name(k), per_kind[ANY]) for k in kinds]
            return JobSpread(np.array(rows), self.weights)
        inverse, names = pd.factorize(_kind_names(kinds))  # one row per kind, not per task
        rows = np.stack([per_kind.get(k, per_kind[ANY]) for k in names.tolist()])
        return JobSpread(rows[inverse], self.weights)

    def to_dict(self) -> dict[str, Any]:
        return {
            "weights": self.weights.tolist(),
            "factors": {t: {k: v.tolist() for k, v in kinds.items()}
                        for t, kinds in self.factors.items()},
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SpreadTable:
        factors = {
            t: {k: np.asarray(v, dtype=float) for k, v in kinds.items()}
            for t, kinds in data["factors"].items()
        }
        return cls(np.asarray(data["weights"], dtype=float), factors)


def _kind_names(kinds: Sequence[Any] | np.ndarray) -> pd.Series:
    """Each task's kind as a name (unset: :data:`UNKNOWN_KIND`, as the replay's workload)."""
    return pd.Series(np.asarray(kinds, dtype=object)).fillna(UNKNOWN_KIND).astype(str)


def _kind_name(kind: Any) -> str:
    """:func:`_kind_names` of one task's kind, in plain Python."""
    return UNKNOWN_KIND if pd.isna(kind) else str(kind)
