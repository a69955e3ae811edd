"""Run the peers' protocol on a workflow: every method walks every task type in the
trace's order (the types outer, the methods inner, as the reference code does: the
as-coded Witt-LR pair shares one error list), and the results as one table's cells."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np
import pandas as pd

from scoutless.config import Settings, SizingSettings
from scoutless.sizing import baselines as b
from scoutless.sizing.features import Release
from scoutless.sizing.lwr import LowWastage
from scoutless.sizing.online import OnlineSizer
from scoutless.sizing.protocol import (
    Instances,
    Outcome,
    PeerSizer,
    Tally,
    TaskType,
    eligible_types,
    task_types,
    walk,
)  # fmt: skip
from scoutless.sizing.resources import GBH, MEMORY, Resource

#: the baselines, in the reference code's order per type (std, Tovar, percentile,
#: std-under share one list: the as-coded look-ahead), then the rest
BASELINES: tuple[str, ...] = (
    "witt_lr_std", "tovar", "witt_percentile", "witt_lr_std_under",
    "witt_lr_std_own", "witt_lr_std_under_own", "users_presets_fair", "jedi", "vpa",
    "witt_lwr", "oracle",
)  # fmt: skip
#: the baselines a goal is measured against, per resource: every online baseline the
#: project runs for it (the users' presets charged fairly; std-under only without its
#: look-ahead; not the oracle)
GOAL_BASELINES: dict[str, tuple[str, ...]] = {
    "memory": (
        "users_presets_fair", "witt_percentile", "witt_lr_std",
        "witt_lr_std_own", "witt_lr_std_under_own", "tovar", "jedi", "vpa", "witt_lwr",
    ),
    "walltime": (
        "users_presets_fair", "witt_percentile", "witt_lr_std",
        "witt_lr_std_own", "witt_lr_std_under_own",
    ),
}  # fmt: skip
#: the Witt-LR error lists a workflow's sizers share (shared, std's own, std-under's own)
ErrorLists = tuple[b.ErrorList, b.ErrorList, b.ErrorList]


def baseline_sizers(
    settings: Settings, resource: Resource = MEMORY, *, requests: bool = True,
    lists: ErrorLists | None = None,
) -> list[PeerSizer]:  # fmt: skip
    """Fresh baseline sizers for one workflow (state shared across its types, no further):
    for walltime the unit-agnostic ones (Tovar's node, JEDI's ladder, VPA's step and the
    low-wastage regression's doubling are memory's); ``requests``: the users' requests are
    known (else not a method); ``lists``: the Witt-LR error lists to carry on."""
    shared, own_std, own_under = lists or (b.ErrorList(), b.ErrorList(), b.ErrorList())
    memory_only = [b.Tovar()] if resource.name == "memory" else []
    sizers = [
        b.WittLR("witt_lr_std", shared), *memory_only, b.WittPercentile(),
        b.WittLR("witt_lr_std_under", shared, under=True),
        b.WittLR("witt_lr_std_own", own_std), b.WittLR("witt_lr_std_under_own", own_under, under=True),
        b.UsersRequest(),
    ]  # fmt: skip
    if resource.name == "memory":
        jedi = b.Jedi(settings.targets, settings.replay.ram_ladder_mb_per_core)
        sizers += [jedi, b.Vpa(), LowWastage()]
    return [s for s in sizers if requests or s.name != "users_presets_fair"] + [b.Oracle()]


def users_presets(task: TaskType, resource: Resource = MEMORY) -> Tally:
    """The users' presets as the peers book them: (request − peak) at the resource's slack
    price × the weight, no failures (a request below the peak books a negative excess)."""
    on = task.online
    w = weights(on, resource)
    return Tally(
        over=float(np.sum(resource.slack_price * (on.request - on.peak) * w)),
        usage=float(np.sum(on.need * w)), instances=len(on),
    )  # fmt: skip


def has_requests(types: Sequence[TaskType]) -> bool:
    """Every online instance of every type has the user's request (else the users'
    presets are no method: a walltime without a ``time`` limit)."""
    return all(np.isfinite(t.online.request).all() for t in types)


def run_types(
    types: Sequence[TaskType],
    sizers: Sequence[PeerSizer],
    resource: Resource = MEMORY,
    attempts: dict[str, list[list[float]]] | None = None,
    on_type: Callable[[int, int, str], None] | None = None,
) -> dict[str, dict]:
    """Walk every type with every sizer; per method the workflow's cell and per type's.
    ``attempts``, when given, gets each method's attempts per instance in the walk's order;
    ``on_type(done, total, name)`` is called before each type (a progress bar)."""
    out: dict[str, dict] = {"methods": {}, "task_types": {}}
    presets = ["users_presets"] if has_requests(types) else []
    totals = {s.name: Tally() for s in sizers} | {p: Tally() for p in presets}
    keep = attempts is not None
    for done, task in enumerate(types):
        if on_type is not None:
            on_type(done, len(types), task.name)
        tallies = {s.name: walk(s, task, keep_attempts=keep, resource=resource) for s in sizers}
        for name, tally in tallies.items():
            if keep:
                attempts.setdefault(name, []).extend(tally.attempts)
        tallies |= {p: users_presets(task, resource) for p in presets}
        for name, tally in tallies.items():
            totals[name].add(tally)
        cells = {name: tally.summary(resource) for name, tally in tallies.items()}
        out["task_types"][task.name] = {"instances": len(task.online), "methods": cells}
    out["methods"] = {name: t.summary(resource) for name, t in totals.items()}
    return out


def run_workflow(
    frame: pd.DataFrame,
    seed: int,
    workflow: str,
    extra: Callable[[list[TaskType]], Sequence[PeerSizer]] | None = None,
    *,
    settings: Settings,
    resource: Resource = MEMORY,
    features: str = "submission",
) -> dict[str, dict]:
    """The protocol on one workflow's instance table: the baselines and ``extra`` sizers
    (built with the workflow's task types, e.g. scoutless's online sizer)."""
    types = task_types(frame, seed, workflow, resource, features)
    sizers = baseline_sizers(settings, resource, requests=has_requests(types))
    return run_types(types, sizers + list(extra(types) if extra else []), resource)


def gbh(bytes_ms: float) -> float:
    return bytes_ms * GBH


def features(inst: Instances, i: int) -> Release:
    """Instance ``i``'s features at release (its input size per the features option)."""
    return Release(
        input_size=float(inst.input_size[i]), cores=float(inst.cpus[i]),
        request=float(inst.request[i]),
    )  # fmt: skip


def weights(inst: Instances, resource: Resource) -> np.ndarray:
    """Each instance's weight (what its cost scales with: runtime or cores)."""
    return inst.runtime if resource.weight_by == "runtime" else inst.cpus


class PeersOnline:
    """The online sizer under the peers' protocol (keyed there by the task type and the
    instance's index; here by the type's name and the instance's features): each online
    outcome learnt as it comes; an instance the sizer knows nothing of (a type sized
    cold, before its first outcome) gets the user's request."""

    def __init__(self, sizer: OnlineSizer, name: str = "scoutless", resource: Resource = MEMORY):
        self.name = name
        self.sizer = sizer
        self.resource = resource

    def begin(self, task: TaskType) -> None:
        pass

    def first(self, task: TaskType, i: int) -> float:
        a = self.sizer.first(task.name, features(task.online, i))
        return a if np.isfinite(a) else float(task.online.request[i])

    def retry(self, task: TaskType, i: int, failed: float) -> float:
        a = self.sizer.retry(task.name, features(task.online, i), failed)
        return max(a, failed * self.resource.retry_growth)

    def learn(self, task: TaskType, i: int, outcome: Outcome) -> None:
        on = task.online  # weighted by what the resource's cost scales with
        weighted = Outcome(outcome.need, float(weights(on, self.resource)[i]), outcome.censored)
        self.sizer.learn(task.name, features(on, i), weighted)


def _start(
    sizer: OnlineSizer, key: Hashable, inst: Instances, resource: Resource, borrowed: bool = False
) -> None:
    feats = [features(inst, j) for j in range(len(inst))]
    sizer.start_type(key, feats, inst.need, weights(inst, resource), borrowed=borrowed)


def warm_sizer(
    types: Sequence[TaskType], settings: SizingSettings, resource: Resource = MEMORY
) -> PeersOnline:
    """The online sizer knowing every type's history up front (the protocol allows it);
    ``settings``: the sizing constants (a sensitivity run passes others)."""
    sizer = OnlineSizer(settings, failure_price=resource.failure_price())
    for task in types:
        _start(sizer, task.name, task.history, resource)
    return PeersOnline(sizer, resource=resource)


def type_key(process: str) -> str:
    """A task type's name across workflows: the last part of Nextflow's qualified process
    name, lower-cased (``NFCORE_RNASEQ:RNASEQ:FASTQC`` → ``fastqc``)."""
    return str(process).split(":")[-1].strip().lower()


def cold_sizer(
    types: Sequence[TaskType],
    histories: Sequence[pd.DataFrame],
    settings: SizingSettings,
    resource: Resource = MEMORY,
    features: str = "submission",
) -> PeersOnline:
    """The online sizer with none of the workflow's own history: a type whose name recurs in the
    other workflows' tables starts from their instances; every other workflow's type
    shapes the residual prior; a type seen nowhere starts from the user's request."""
    pooled: dict[str, list[Instances]] = {}
    for frame in histories:
        for name, inst in eligible_types(frame, resource, features):
            pooled.setdefault(type_key(name), []).append(inst)
    sizer, used = OnlineSizer(settings, failure_price=resource.failure_price()), set()
    for task in types:
        if type_key(task.name) in pooled:
            inst = Instances.concat(pooled[type_key(task.name)])
            _start(sizer, task.name, inst, resource, borrowed=True)
            used.add(type_key(task.name))
    for key, parts in pooled.items():
        if key not in used:
            _start(sizer, ("history", key), Instances.concat(parts), resource)
    return PeersOnline(sizer, name="scoutless_cold", resource=resource)
