"""The peers' protocol (Sizey, Bader et al. 2024): which instances are eligible, the split
into history and online sequence, and the accounting of every attempt.

Per workflow, task types (``process``) are taken in the order the trace first names
them; rows whose ``rss`` is not positive are dropped; a type with fewer than 34 rows left
or with any ``realtime`` of 0 is skipped. Each type's rows are split by scikit-learn's
``train_test_split(test_size=0.7, random_state=seed)``: ~30 % history, the rest online in
the order that call returns. An attempt below the need costs one failure and is retried;
what each attempt costs is the sized resource's (`resources.py`; memory: a failed attempt
its whole allocation × runtime, the attempt that fits its excess × runtime).

An instance's input size is what the features option says (`FEATURES`): ``submission``
(default) takes only what is known at release — an ``input_size`` column where the table
has one, none in a Nextflow trace — and ``peers-rchar`` the peers' ``rchar``, the bytes
the instance read, measured during its run (what their regressions use).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from scoutless.sizing.instances import input_size_column
from scoutless.sizing.resources import MEMORY, Resource

#: a type with fewer eligible rows is skipped (the peers' rule)
MIN_ROWS = 34
#: the online share of each type's rows
ONLINE_FRACTION = 0.7
#: attempts per instance before the walk gives up on a method (a retry that never grows)
MAX_ATTEMPTS = 64


@dataclass(frozen=True)
class Instances:
    """Instances of one task type, in order: need and the user's request (the resource's
    unit), runtime (ms), input size (bytes, per the features option), cores; ``peak`` is
    what the users' presets are booked against (``peak_rss`` for memory)."""

    need: np.ndarray
    runtime: np.ndarray
    input_size: np.ndarray
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


def eligible_types(
    frame: pd.DataFrame, resource: Resource = MEMORY, features: str = "submission"
) -> list[tuple[str, Instances]]:
    """The task types the protocol sizes, in the order the table first names them, with
    their eligible rows in table order (see the module's docstring): the same rows
    whatever the resource. Raises ValueError for an unknown ``features`` option."""
    input_column = input_size_column(features)
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
            need=_column(rows, resource.need), runtime=runtime,
            input_size=_column(rows, input_column), cpus=np.maximum(cpus, 1.0),
            request=_column(rows, resource.request), peak=_column(rows, resource.peak),
            submit=_column(rows, "submit"), complete=_column(rows, "complete"),
        )))  # fmt: skip
    return out


def peers_split(instances: Instances, seed: int) -> tuple[Instances, Instances]:
    """History and online sequence: ``train_test_split(test_size=0.7, random_state=seed)``
    (the permutation depends only on the row count and the seed)."""
    hist, online = train_test_split(
        np.arange(len(instances)), test_size=ONLINE_FRACTION, random_state=seed
    )
    return instances.take(np.asarray(hist)), instances.take(np.asarray(online))


def task_types(
    frame: pd.DataFrame, seed: int, workflow: str = "", resource: Resource = MEMORY,
    features: str = "submission",
) -> list[TaskType]:  # fmt: skip
    """A workflow's eligible task types, each split by the peers' protocol."""
    types = []
    for name, inst in eligible_types(frame, resource, features):
        hist, online = peers_split(inst, seed)
        types.append(TaskType(workflow=workflow, name=name, history=hist, online=online))
    return types


Key = TypeVar("Key", contravariant=True)
Known = TypeVar("Known", contravariant=True)


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended: ``need`` the measured need, or a lower bound on it when
    ``censored`` (an attempt killed below its need); ``runtime`` how long it ran (s or ms,
    the caller's unit: it weighs an outcome against the others, nothing more)."""

    need: float
    runtime: float
    censored: bool = False


class Sizer(Protocol[Key, Known]):
    """What every online sizer speaks (the engine, the peers' baselines, the replay's
    ``online``): asked for an instance's first allocation and for each retry, told each
    attempt's outcome. ``key`` names the task type (or what the caller keys sizing by),
    ``features`` what is known of the instance before it runs."""

    def first(self, key: Key, features: Known) -> float:
        """The first attempt's allocation (NaN: nothing to go on)."""
        ...

    def retry(self, key: Key, features: Known, failed: float) -> float:
        """The next attempt's allocation after one failed at ``failed``."""
        ...

    def learn(self, key: Key, features: Known, outcome: Outcome) -> None:
        """An attempt's outcome."""
        ...


class PeerSizer(Sizer[TaskType, int], Protocol):
    """A method under the peers' protocol: keyed by the task type, an instance known by
    its index in the type's online sequence; told each type before its instances."""

    name: str

    def begin(self, task: TaskType) -> None: ...


@dataclass
class Tally:
    """Accounting of a walk in the resource's need-unit × weight (over: what the attempt
    that fits wasted; under: what the failed attempts cost), failures, usage, instances."""

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

    def summary(self, resource: Resource = MEMORY) -> dict[str, float | int]:
        """One cell of the results table: wastage, over, under (in the resource's unit:
        ``wastage_gbh`` for memory, ``wastage_core_h`` for walltime), failures, MAQ,
        instances."""
        waste = self.over + self.under
        maq = self.usage / (self.usage + waste) if self.usage + waste > 0 else 1.0
        u, scale = resource.unit, resource.scale
        return {
            f"wastage_{u}": waste * scale, f"over_{u}": self.over * scale,
            f"under_{u}": self.under * scale, "failures": self.failures, "maq": maq,
            "instances": self.instances,
        }  # fmt: skip


def charge(
    need: float, runtime: float, allocations: list[float], resource: Resource = MEMORY,
    cores: float = 1.0,
) -> Tally:  # fmt: skip
    """The cost of one instance's attempts (the last one fits, the others failed), at the
    resource's prices × the outcome's weight."""
    w = resource.weight(runtime, cores)
    tally = Tally(usage=need * w, instances=1)
    for a in allocations[:-1]:
        tally.under += resource.kill_price * a * w
        tally.failures += 1
    tally.over += resource.slack_price * (allocations[-1] - need) * w
    return tally


def walk(
    sizer: PeerSizer, task: TaskType, *, keep_attempts: bool = False, resource: Resource = MEMORY
) -> Tally:
    """Size a task type's online instances in order with one method and account for them.

    Raises RuntimeError naming the method, type and instance when a retry never reaches
    the need within `MAX_ATTEMPTS` attempts.
    """
    sizer.begin(task)
    total = Tally()
    for i in range(len(task.online)):
        need, runtime = float(task.online.need[i]), float(task.online.runtime[i])
        allocs = attempts(sizer, task, i)
        total.add(charge(need, runtime, allocs, resource, float(task.online.cpus[i])))
        if keep_attempts:
            total.attempts.append(allocs)
        sizer.learn(task, i, Outcome(need, runtime))
    return total


def attempts(sizer: PeerSizer, task: TaskType, i: int) -> list[float]:
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
        allocs.append(float(sizer.retry(task, i, allocs[-1])))
    return allocs
