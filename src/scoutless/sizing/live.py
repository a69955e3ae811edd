"""The live protocol: every online instance of a workflow sized in submission order across
its task types, each outcome known only once its instance has completed (the traces'
``submit`` and ``complete``). The peers' protocol walks one type after another, so a type
may learn from other types' instances that ended after its own were submitted; here an
instance is decided with exactly the outcomes that had completed strictly before its
submission. Retries are decided with what was known at submission; the accounting is the
peers' (`protocol.charge`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from scoutless.sizing.protocol import Outcome, PeerSizer, Tally, TaskType, attempts, charge
from scoutless.sizing.resources import MEMORY, Resource


class NoClock(ValueError):
    """A table without submission and completion times: the live protocol needs them."""


def clock(types: Sequence[TaskType]) -> tuple[list[tuple[float, int, int]], list[tuple[float, int, int]]]:
    """(time, type, instance) of every online instance's submission, in the order decided
    (ties: the type's order, then the instance's), and of every completion, in time order.

    Raises NoClock when an online instance lacks a submission time.
    """
    subs, ends = [], []
    for t, task in enumerate(types):
        on = task.online
        if on.submit is None or not np.isfinite(on.submit).all():
            raise NoClock(f"{task.workflow}/{task.name}: no submit times (the live protocol's clock)")
        for i in range(len(on)):
            subs.append((float(on.submit[i]), t, i))
            if on.complete is not None and np.isfinite(on.complete[i]):
                ends.append((float(on.complete[i]), t, i))
    return sorted(subs), sorted(ends)


def run_live(
    types: Sequence[TaskType],
    per_type: Callable[[], Sequence[PeerSizer]],
    shared: Sequence[PeerSizer] = (),
    attempts_out: dict[str, list[list[float]]] | None = None,
    resource: Resource = MEMORY,
) -> dict[str, dict]:
    """Size ``types`` live: ``per_type()`` gives each type its own sizers (state that other
    types share lives in them, e.g. an error list), ``shared`` sizers serve every type.
    The cells per method and per type, as `run.run_types` gives them; ``attempts_out``:
    each method's attempts per instance in the order decided; costs at ``resource``'s prices."""
    subs, ends = clock(types)  # before any sizer is fitted: a table without times fails fast
    sizers = [[*per_type(), *shared] for _ in types]
    for task, own in zip(types, sizers, strict=True):
        for sizer in own:
            sizer.begin(task)
    tallies = [{s.name: Tally() for s in own} for own in sizers]
    done = 0
    for when, t, i in subs:
        while done < len(ends) and ends[done][0] < when:
            _, u, j = ends[done]
            done_on = types[u].online
            outcome = Outcome(float(done_on.need[j]), float(done_on.runtime[j]))
            for sizer in sizers[u]:
                sizer.learn(types[u], j, outcome)
            done += 1
        on = types[t].online
        for sizer in sizers[t]:
            allocs = attempts(sizer, types[t], i)
            cost = charge(float(on.need[i]), float(on.runtime[i]), allocs, resource, float(on.cpus[i]))
            tallies[t][sizer.name].add(cost)
            if attempts_out is not None:
                attempts_out.setdefault(sizer.name, []).append(allocs)
    return _cells(types, tallies, resource)


def _cells(
    types: Sequence[TaskType], tallies: list[dict[str, Tally]], resource: Resource
) -> dict[str, dict]:
    totals: dict[str, Tally] = {}
    out: dict[str, dict] = {"methods": {}, "task_types": {}}
    for task, own in zip(types, tallies, strict=True):
        for name, tally in own.items():
            totals.setdefault(name, Tally()).add(tally)
        cells = {name: tally.summary(resource) for name, tally in own.items()}
        out["task_types"][task.name] = {"instances": len(task.online), "methods": cells}
    out["methods"] = {name: t.summary(resource) for name, t in totals.items()}
    return out
