"""The peers' allocators, as their published code sizes (see docs/how-to/sizing.md):
Witt et al.'s percentile and linear-regression sizing, Tovar et al.'s first allocation
minimising expected waste, PanDA JEDI's scouts' P75 × margin with its retry ladder,
Kubernetes VPA, the users' requests and the oracle. Each is a small `PeerSizer`; the walk in
`protocol.py` does the accounting for all of them. The percentile, the regressions, the
users' requests and the oracle know no unit (they size walltime as they size memory);
Tovar's node, JEDI's ladder and VPA's step are memory's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from scoutless.config import TargetSettings
from scoutless.sizing.models import line_fit
from scoutless.sizing.protocol import Outcome, TaskType

#: Tovar's retry when the failed allocation was already the largest seen (a 128 GB node)
TOVAR_NODE_BYTES = 128e9
MIB = 2.0**20


class _SeenNeeds:
    """Per-type state most baselines share: the needs seen (history, then each outcome)."""

    name = "seen"

    def begin(self, task: TaskType) -> None:
        self.needs = list(map(float, task.history.need))

    def learn(self, task: TaskType, i: int, outcome: Outcome) -> None:
        self.needs.append(outcome.need)


class WittPercentile(_SeenNeeds):
    """Witt et al.: the 95th percentile of every need seen; a failure doubles."""

    name = "witt_percentile"

    def first(self, task: TaskType, i: int) -> float:
        return float(np.percentile(self.needs, 95))

    def retry(self, task: TaskType, i: int, failed: float) -> float:
        return failed * 2


@dataclass
class ErrorList:
    """Relative errors (need − raw) / need a Witt-LR offset is computed from; one list may
    be shared by several sizers and across task types (the reference code's class list)."""

    values: list[float] = field(default_factory=list)


class WittLR(_SeenNeeds):
    """Witt et al.'s feedback regression: raw = linear regression of need on input size
    (the peers fit it on MinMax-scaled values, which gives the same line; an unknown
    input size counts as 0, so without any the line is the mean need),
    refit on all history after every instance; allocation raw × (1 + offset), offset the
    std (ddof 0) of the earlier relative errors (``under``: of the positive ones only);
    a failure doubles, or takes the largest need seen when the allocation was negative."""

    def __init__(self, name: str, errors: ErrorList, *, under: bool = False):
        self.name = name
        self.errors = errors
        self.under = under

    def begin(self, task: TaskType) -> None:
        super().begin(task)
        self.x = list(map(_known, task.history.input_size))
        self.raws: dict[int, float] = {}
        self.intercept, self.slope = line_fit(np.array(self.x), np.array(self.needs))

    def _offset(self) -> float:
        errs = np.asarray(self.errors.values)
        if self.under:
            errs = errs[errs > 0]
        return float(np.std(errs)) if len(errs) else 0.0

    def first(self, task: TaskType, i: int) -> float:
        # kept per instance: under the live protocol others are decided before it ends
        raw = self.raws[i] = self.intercept + self.slope * _known(task.online.input_size[i])
        return raw + self._offset() * raw

    def retry(self, task: TaskType, i: int, failed: float) -> float:
        return max(self.needs) if failed < 0 else failed * 2

    def learn(self, task: TaskType, i: int, outcome: Outcome) -> None:
        self.errors.values.append((outcome.need - self.raws.pop(i)) / outcome.need)
        super().learn(task, i, outcome)
        self.x.append(_known(task.online.input_size[i]))
        self.intercept, self.slope = line_fit(np.array(self.x), np.array(self.needs))


def _known(x: float) -> float:
    """An input size as the regression takes it: 0 when unknown."""
    return float(x) if np.isfinite(x) else 0.0


class Tovar:
    """Tovar et al. (TPDS 2017), "waste" mode: needs bucketed by ``ceil`` of the byte
    value and weighted by runtime; the first allocation a minimises a·t̄ + a_max·t̄(>a);
    a failure takes the largest need seen, or a whole 128 GB node past it."""

    name = "tovar"

    def begin(self, task: TaskType) -> None:
        self.values = list(np.ceil(task.history.need.astype(float)))
        self.times = list(np.ceil(task.history.runtime.astype(float)))

    def first(self, task: TaskType, i: int) -> float:
        values, inverse = np.unique(np.asarray(self.values), return_inverse=True)
        times = np.bincount(inverse, weights=np.asarray(self.times))
        values, times = values[::-1], times[::-1]  # descending
        n = len(self.values)
        above = np.concatenate(([0.0], np.cumsum(times)[:-1])) / n
        mean_time = times.sum() / n
        expected = values * mean_time + values[0] * above
        return float(values[int(np.argmin(expected))])

    def retry(self, task: TaskType, i: int, failed: float) -> float:
        largest = max(self.values)
        return largest if failed < largest else TOVAR_NODE_BYTES

    def learn(self, task: TaskType, i: int, outcome: Outcome) -> None:
        self.values.append(float(np.ceil(outcome.need)))
        self.times.append(float(np.ceil(outcome.runtime)))


class UsersRequest(_SeenNeeds):
    """The user's request (``memory``) charged fairly: a request below the need is a
    failure, retried with the largest need seen (doubling past it)."""

    name = "users_presets_fair"

    def first(self, task: TaskType, i: int) -> float:
        return float(task.online.request[i])

    def retry(self, task: TaskType, i: int, failed: float) -> float:
        largest = max(self.needs)
        return largest if failed < largest else failed * 2


class Jedi(_SeenNeeds):
    """PanDA JEDI: P75 of the per-core needs seen × the memory margin, × cores; a failure
    climbs the per-core ladder (1/2/3/4/6/8 GB by default), doubling past the top."""

    name = "jedi"

    def __init__(self, targets: TargetSettings, ladder_mb_per_core: Sequence[float]) -> None:
        """``targets``: PanDA's memory percentile and margin; ``ladder_mb_per_core``: its
        retry ladder (``Settings.replay.ram_ladder_mb_per_core``)."""
        self.targets = targets
        self.ladder = [mb * MIB for mb in ladder_mb_per_core]

    def first(self, task: TaskType, i: int) -> float:
        targets = self.targets
        cpus = float(task.online.cpus[i])
        per_core = np.asarray(self.needs) / self._cores
        p = float(np.percentile(per_core, targets.memory_percentile))
        return p * targets.memory_margin * cpus

    def begin(self, task: TaskType) -> None:
        super().begin(task)
        self._cores = list(map(float, task.history.cpus))

    def learn(self, task: TaskType, i: int, outcome: Outcome) -> None:
        super().learn(task, i, outcome)
        self._cores.append(float(task.online.cpus[i]))

    def retry(self, task: TaskType, i: int, failed: float) -> float:
        cpus = float(task.online.cpus[i])
        higher = [step for step in self.ladder if step > failed / cpus]
        return higher[0] * cpus if higher else failed * 2


class Vpa(_SeenNeeds):
    """Kubernetes VPA: P90 of the needs seen + 15 %; after an OOM kill max(×1.2, +100 MiB)."""

    name = "vpa"

    def first(self, task: TaskType, i: int) -> float:
        return float(np.percentile(self.needs, 90)) * 1.15

    def retry(self, task: TaskType, i: int, failed: float) -> float:
        return max(failed * 1.2, failed + 100 * MIB)


class Oracle:
    """The need itself (MAQ 1): the floor every method is measured from."""

    name = "oracle"

    def begin(self, task: TaskType) -> None:
        pass

    def first(self, task: TaskType, i: int) -> float:
        return float(task.online.need[i])

    def retry(self, task: TaskType, i: int, failed: float) -> float:
        return float(task.online.need[i])

    def learn(self, task: TaskType, i: int, outcome: Outcome) -> None:
        pass
