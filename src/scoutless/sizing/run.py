"""Run the peers' protocol on a workflow: every method walks every task type in the
trace's order (the types outer, the methods inner, as the reference code does: the
as-coded Witt-LR pair shares one error list), and the results as one table's cells."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np
import pandas as pd

from scoutless.config import SizingSettings
from scoutless.sizing import baselines as b
from scoutless.sizing.engine import Engine, Features
from scoutless.sizing.lwr import LowWastage
from scoutless.sizing.protocol import (
    GBH,
    Instances,
    Sizer,
    Tally,
    TaskType,
    eligible_types,
    task_types,
    walk,
)  # fmt: skip

#: the baselines, in the reference code's order per type (std, Tovar, percentile,
#: std-under share one list: the as-coded look-ahead), then the rest
BASELINES: tuple[str, ...] = (
    "witt_lr_std", "tovar", "witt_percentile", "witt_lr_std_under",
    "witt_lr_std_own", "witt_lr_std_under_own", "users_presets_fair", "jedi", "vpa",
    "witt_lwr", "oracle",
)  # fmt: skip
#: the baselines a goal is measured against: every online baseline the project runs (the
#: users' presets charged fairly; std-under only without its look-ahead; not the oracle)
GOAL_BASELINES: tuple[str, ...] = (
    "users_presets_fair", "witt_percentile", "witt_lr_std", "witt_lr_std_own",
    "witt_lr_std_under_own", "tovar", "jedi", "vpa", "witt_lwr",
)  # fmt: skip


def baseline_sizers(lists: tuple[b.ErrorList, ...] | None = None) -> list[Sizer]:
    """Fresh baseline sizers for one workflow (state shared across its types, no further);
    ``lists``: the Witt-LR error lists (shared, std's own, std-under's own) to carry on."""
    shared, own_std, own_under = lists or (b.ErrorList(), b.ErrorList(), b.ErrorList())
    return [
        b.WittLR("witt_lr_std", shared), b.Tovar(), b.WittPercentile(),
        b.WittLR("witt_lr_std_under", shared, under=True),
        b.WittLR("witt_lr_std_own", own_std), b.WittLR("witt_lr_std_under_own", own_under, under=True),
        b.UsersRequest(), b.Jedi(), b.Vpa(), LowWastage(), b.Oracle(),
    ]  # fmt: skip


def users_presets(task: TaskType) -> Tally:
    """The users' presets as the peers book them: (request − peak_rss) × runtime, no
    failures (a request below the peak books a negative excess)."""
    on = task.online
    return Tally(
        over=float(np.sum((on.request - on.peak) * on.runtime)),
        usage=float(np.sum(on.need * on.runtime)), instances=len(on),
    )  # fmt: skip


def run_types(
    types: Sequence[TaskType],
    sizers: Sequence[Sizer],
    attempts: dict[str, list[list[float]]] | None = None,
) -> dict[str, dict]:
    """Walk every type with every sizer; per method the workflow's cell and per type's.
    ``attempts``, when given, gets each method's attempts per instance in the walk's order."""
    out: dict[str, dict] = {"methods": {}, "task_types": {}}
    totals = {s.name: Tally() for s in sizers} | {"users_presets": Tally()}
    for task in types:
        cells = {}
        for sizer in sizers:
            tally = walk(sizer, task, keep_attempts=attempts is not None)
            if attempts is not None:
                attempts.setdefault(sizer.name, []).extend(tally.attempts)
            totals[sizer.name].add(tally)
            cells[sizer.name] = tally.summary()
        presets = users_presets(task)
        totals["users_presets"].add(presets)
        cells["users_presets"] = presets.summary()
        out["task_types"][task.name] = {"instances": len(task.online), "methods": cells}
    out["methods"] = {name: t.summary() for name, t in totals.items()}
    return out


def run_workflow(
    frame: pd.DataFrame,
    seed: int,
    workflow: str,
    extra: Callable[[list[TaskType]], Sequence[Sizer]] | None = None,
) -> dict[str, dict]:
    """The protocol on one workflow's instance table: the baselines and ``extra`` sizers
    (built with the workflow's task types, e.g. scoutless's engine)."""
    types = task_types(frame, seed, workflow)
    sizers = baseline_sizers() + list(extra(types) if extra else [])
    return run_types(types, sizers)


def gbh(bytes_ms: float) -> float:
    return bytes_ms * GBH


def features(inst: Instances, i: int) -> Features:
    return Features(
        input_size=float(inst.rchar[i]), cpus=float(inst.cpus[i]), request=float(inst.request[i])
    )


class EngineSizer:
    """scoutless's engine under the peers' protocol: each online outcome learnt as it
    comes; an instance the engine knows nothing of (a type sized cold, before its first
    outcome) gets the user's request."""

    def __init__(self, engine: Engine, name: str = "scoutless"):
        self.name = name
        self.engine = engine

    def begin(self, task: TaskType) -> None:
        pass

    def first(self, task: TaskType, i: int) -> float:
        a = self.engine.allocate(task.name, features(task.online, i))
        return a if np.isfinite(a) else float(task.online.request[i])

    def retry(self, task: TaskType, i: int, failed: float, attempt: int) -> float:
        return self.engine.retry(task.name, features(task.online, i), failed)

    def learn(self, task: TaskType, i: int, need: float) -> None:
        on = task.online
        self.engine.observe(task.name, features(on, i), need, float(on.runtime[i]))


def _start(engine: Engine, key: Hashable, inst: Instances, borrowed: bool = False) -> None:
    feats = [features(inst, j) for j in range(len(inst))]
    engine.start_type(key, feats, inst.need, inst.runtime, borrowed=borrowed)


def warm_sizer(types: Sequence[TaskType], settings: SizingSettings | None = None) -> EngineSizer:
    """The engine knowing every type's history up front (the protocol allows it);
    ``settings``: other constants than the configured ones (a sensitivity run)."""
    engine = Engine(settings)
    for task in types:
        _start(engine, task.name, task.history)
    return EngineSizer(engine)


def type_key(process: str) -> str:
    """A task type's name across workflows: the last part of Nextflow's qualified process
    name, lower-cased (``NFCORE_RNASEQ:RNASEQ:FASTQC`` → ``fastqc``)."""
    return str(process).split(":")[-1].strip().lower()


def cold_sizer(types: Sequence[TaskType], histories: Sequence[pd.DataFrame]) -> EngineSizer:
    """The engine with none of the workflow's own history: a type whose name recurs in the
    other workflows' tables starts from their instances; every other workflow's type
    shapes the residual prior; a type seen nowhere starts from the user's request."""
    pooled: dict[str, list[Instances]] = {}
    for frame in histories:
        for name, inst in eligible_types(frame):
            pooled.setdefault(type_key(name), []).append(inst)
    engine, used = Engine(), set()
    for task in types:
        if type_key(task.name) in pooled:
            _start(engine, task.name, Instances.concat(pooled[type_key(task.name)]), True)
            used.add(type_key(task.name))
    for key, parts in pooled.items():
        if key not in used:
            _start(engine, ("history", key), Instances.concat(parts))
    return EngineSizer(engine, name="scoutless_cold")
