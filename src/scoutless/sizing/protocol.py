"""The peers' protocol (Sizey, Bader et al. 2024): which instances are eligible, the split
into history and online sequence, and the accounting of every attempt.

Per workflow, task types (``process``) are taken in the order the trace first names
them; rows whose ``rss`` is not positive are dropped; a type with fewer than 34 rows left
or with any ``realtime`` of 0 is skipped. Each type's rows are split by scikit-learn's
``train_test_split(test_size=0.7, random_state=seed)``: ~30 % history, the rest online in
the order that call returns. An attempt below the need costs its whole allocation ×
runtime and one failure and is retried; the attempt that fits costs its excess × runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

#: a type with fewer eligible rows is skipped (the peers' rule)
MIN_ROWS = 34
#: the online share of each type's rows
ONLINE_FRACTION = 0.7
#: bytes·ms → GB·h
GBH = 1e-9 / 3.6e6
#: attempts per instance before the walk gives up on a method (a retry that never grows)
MAX_ATTEMPTS = 64


@dataclass(frozen=True)
class Instances:
    """Instances of one task type, in order: need (bytes), runtime (ms), input size
    (``rchar``, bytes), cores and the user's request (bytes); ``peak`` is ``peak_rss``."""

    need: np.ndarray
    runtime: np.ndarray
    rchar: np.ndarray
    cpus: np.ndarray
    request: np.ndarray
    peak: np.ndarray
    #: when each instance was submitted and completed (ms since the epoch; the live
    #: protocol's clock), None where the table has no times
    submit: np.ndarray | None = None
    complete: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.need)

    def take(self, idx: np.ndarray) -> Instances:
        return Instances(*(_pick(getattr(self, f), idx) for f in self.__dataclass_fields__))

    @staticmethod
    def concat(parts: list[Instances]) -> Instances:
        fields = Instances.__dataclass_fields__
        if not parts:
            return Instances(*(np.zeros(0) for _ in fields))
        return Instances(*(_join([getattr(p, f) for p in parts]) for f in fields))


def _pick(values: np.ndarray | None, idx: np.ndarray) -> np.ndarray | None:
    return None if values is None else values[idx]


def _join(values: list[np.ndarray | None]) -> np.ndarray | None:
    return None if any(v is None for v in values) else np.concatenate(values)


@dataclass(frozen=True)
class TaskType:
    """One task type of a workflow: its history (what a method may know up front) and its
    online sequence (what is sized, in order)."""

    workflow: str
    name: str
    history: Instances
    online: Instances


def _column(rows: pd.DataFrame, name: str, default: float = np.nan) -> np.ndarray:
    if name not in rows.columns:
        return np.full(len(rows), default, dtype=float)
    return pd.to_numeric(rows[name], errors="coerce").to_numpy(dtype=float)


def eligible_types(frame: pd.DataFrame) -> list[tuple[str, Instances]]:
    """The task types the protocol sizes, in the order the table first names them, with
    their eligible rows in table order (see the module's docstring)."""
    out = []
    for name in pd.unique(frame["process"]):
        rows = frame[frame["process"] == name]
        need = _column(rows, "rss")
        rows = rows[need > 0]
        if len(rows) < MIN_ROWS:
            continue
        runtime = _column(rows, "realtime")
        if (runtime == 0).any() or np.isnan(runtime).any():
            continue
        cpus = np.nan_to_num(_column(rows, "cpus", 1.0), nan=1.0)
        out.append((str(name), Instances(
            need=_column(rows, "rss"), runtime=runtime, rchar=_column(rows, "rchar"),
            cpus=np.maximum(cpus, 1.0), request=_column(rows, "memory"),
            peak=_column(rows, "peak_rss"), submit=_column(rows, "submit"),
            complete=_column(rows, "complete"),
        )))  # fmt: skip
    return out


def peers_split(instances: Instances, seed: int) -> tuple[Instances, Instances]:
    """History and online sequence: ``train_test_split(test_size=0.7, random_state=seed)``
    (the permutation depends only on the row count and the seed)."""
    hist, online = train_test_split(
        np.arange(len(instances)), test_size=ONLINE_FRACTION, random_state=seed
    )
    return instances.take(np.asarray(hist)), instances.take(np.asarray(online))


def task_types(frame: pd.DataFrame, seed: int, workflow: str = "") -> list[TaskType]:
    """A workflow's eligible task types, each split by the peers' protocol."""
    types = []
    for name, inst in eligible_types(frame):
        hist, online = peers_split(inst, seed)
        types.append(TaskType(workflow=workflow, name=name, history=hist, online=online))
    return types


class Sizer(Protocol):
    """An online sizing method: told each task type before its instances, asked for the
    first allocation of an instance and for each retry, told the need after success."""

    name: str

    def begin(self, task: TaskType) -> None: ...

    def first(self, task: TaskType, i: int) -> float: ...

    def retry(self, task: TaskType, i: int, failed: float, attempt: int) -> float: ...

    def learn(self, task: TaskType, i: int, need: float) -> None: ...


@dataclass
class Tally:
    """Accounting of a walk: wastage in bytes·ms (over: excess of the attempt that fits;
    under: whole allocation of each failed attempt), failures, usage and instances."""

    over: float = 0.0
    under: float = 0.0
    failures: int = 0
    usage: float = 0.0
    instances: int = 0
    attempts: list[list[float]] = field(default_factory=list, repr=False)

    def add(self, other: Tally) -> None:
        self.over += other.over
        self.under += other.under
        self.failures += other.failures
        self.usage += other.usage
        self.instances += other.instances

    def summary(self) -> dict[str, float | int]:
        """One cell of the results table: wastage, over, under (GB·h), failures, MAQ, instances."""
        waste = self.over + self.under
        maq = self.usage / (self.usage + waste) if self.usage + waste > 0 else 1.0
        return {
            "wastage_gbh": waste * GBH, "over_gbh": self.over * GBH,
            "under_gbh": self.under * GBH, "failures": self.failures, "maq": maq,
            "instances": self.instances,
        }  # fmt: skip


def charge(need: float, runtime: float, allocations: list[float]) -> Tally:
    """The cost of one instance's attempts (the last one fits, the others failed)."""
    tally = Tally(usage=need * runtime, instances=1)
    for a in allocations[:-1]:
        tally.under += a * runtime
        tally.failures += 1
    tally.over += (allocations[-1] - need) * runtime
    return tally


def walk(sizer: Sizer, task: TaskType, *, keep_attempts: bool = False) -> Tally:
    """Size a task type's online instances in order with one method and account for them.

    Raises RuntimeError naming the method, type and instance when a retry never reaches
    the need within `MAX_ATTEMPTS` attempts.
    """
    sizer.begin(task)
    total = Tally()
    for i in range(len(task.online)):
        allocs = attempts(sizer, task, i)
        total.add(charge(float(task.online.need[i]), float(task.online.runtime[i]), allocs))
        if keep_attempts:
            total.attempts.append(allocs)
        sizer.learn(task, i, float(task.online.need[i]))
    return total


def attempts(sizer: Sizer, task: TaskType, i: int) -> list[float]:
    """One online instance's attempts by ``sizer``: the first, then retries until one fits.

    Raises RuntimeError naming the method, type and instance when a retry never reaches
    the need within `MAX_ATTEMPTS` attempts.
    """
    need = float(task.online.need[i])
    allocs = [float(sizer.first(task, i))]
    while allocs[-1] < need or not np.isfinite(allocs[-1]):
        if len(allocs) >= MAX_ATTEMPTS or not np.isfinite(allocs[-1]):
            raise RuntimeError(
                f"{sizer.name}: {task.workflow}/{task.name} instance {i}: "
                f"{len(allocs)} attempts below the need {need:.4g} (last {allocs[-1]:.4g})"
            )
        allocs.append(float(sizer.retry(task, i, allocs[-1], len(allocs))))
    return allocs
