"""The one decision: from tasks' value distributions and their jobs to what is allocated.

:class:`SiteDecision` is built once from the settings (the site's rules, the prices of each
width's standard resource type, the kill caps, the grid, what the site can allocate at
all) and what a history taught (the spread of a task's jobs around its value, per task
kind: a bundle carries it, :mod:`.spread_table`; the load on each width's HIMEM and long-queue
caps, :mod:`.room_loads`, likewise, or the settings where the operator knows it). The service, the listener and
``taskparams`` (through the service's pipeline) and the replay's strategies call the same
object: the replay feeds it the model (``predicted``, ``hybrid``, ``selective``) or the
generator's truth (``bayes``); so what the replay measures is what the service answers.

A task's width (multicore or not) is known at submission, so its prices are its standard
type's (SCORE or MCORE, ``allocation.resource_prices`` over ``allocation.prices``);
whether a job lands in a HIMEM slot is what the allocation decides, priced by the rules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scoutless.allocation.allocate import (
    Allocation,
    ScoutChoice,
    cost_allocation,
    selective,
    value_allocation,
)
from scoutless.allocation.bounds import AnswerBounds
from scoutless.allocation.context import JobContext, Numbers, job_context
from scoutless.allocation.costs import COSTS
from scoutless.allocation.room_loads import RoomLoads
from scoutless.allocation.site import SiteRules
from scoutless.allocation.spread_table import SpreadTable
from scoutless.allocation.values import ConformalLevels, ValueDistribution
from scoutless.config import AllocationSettings, PandaDefaults, Prices, ResourceType, Settings

#: a task's width: multicore (True) or single-core (False)
WIDTHS = (False, True)


def standard_types(types: Mapping[str, ResourceType]) -> dict[bool, str]:
    """multicore → the name of that width's standard type (least MB/core, then name)."""
    out: dict[bool, str] = {}
    for name, t in sorted(types.items(), key=lambda item: (item[1].mb_per_core, item[0])):
        out.setdefault(t.multicore, name)
    return out


@dataclass(frozen=True)
class SiteDecision:
    """What a site allocates a task, per width (multicore or not): its prices and rules."""

    allocation: AllocationSettings
    panda: PandaDefaults
    prices: Mapping[bool, Prices]
    rules: Mapping[bool, SiteRules]
    bounds: AnswerBounds
    #: the jobs' spread per task kind (None: every job needs its task's value)
    spreads: SpreadTable | None = None
    #: the room loads ``rules`` were built at, and where they come from
    room_loads: RoomLoads = dataclasses.field(default_factory=RoomLoads.none)

    @classmethod
    def of(
        cls,
        settings: Settings,
        spreads: SpreadTable | None = None,
        room_loads: RoomLoads | None = None,
    ) -> SiteDecision:
        """The decision under ``settings``: the rules with the memory grace the site
        guarantees (:meth:`SiteRules.deciding`) at each width's room loads
        (``allocation.room_loads``, else ``room_loads``: a bundle's, else 0), each width's
        standard type's prices."""
        rules = SiteRules.of(settings.replay).deciding(settings.allocation)
        loads = RoomLoads.chosen(settings.allocation, room_loads)
        names = standard_types(settings.replay.resource_types)
        return cls(
            allocation=settings.allocation, panda=settings.panda,
            prices={w: settings.allocation.prices_for(names.get(w)) for w in WIDTHS},
            rules={w: loads.rules(rules, w) for w in WIDTHS}, bounds=AnswerBounds.of(settings),
            spreads=spreads, room_loads=loads,
        )  # fmt: skip

    def with_rules(self, rules: Mapping[bool, SiteRules]) -> SiteDecision:
        """The same decision under other rules per width (a replay's site loads)."""
        return dataclasses.replace(self, rules=dict(rules))

    def job(self, numbers: Numbers, n: int, dists: Mapping[str, ValueDistribution]) -> JobContext:
        """Per task, the job priced, from its submission features: a job runs for the
        walltime median (within the site's longest queue; a typical job's where the
        bundle predicts no walltime)."""
        wall = None
        if "walltime" in dists:
            wall = self.bounds.clamp("walltime", dists["walltime"].median())
        return job_context(numbers, n, self.panda, wall)

    def allocate(
        self,
        dists: Mapping[str, ValueDistribution],
        levels: Mapping[str, ConformalLevels | None],
        job: JobContext,
        *,
        policy: str,
        alpha: float,
        kinds: Sequence[Any] | np.ndarray | None = None,
        targets: Iterable[str] | None = None,
    ) -> dict[str, Allocation]:
        """Per target (default: every one of ``dists``): under ``cost`` the least expected
        cost for the targets a cost model prices, else the calibrated (1 - alpha) value;
        the value within what the site can allocate (the costs stay the unbounded
        value's). ``kinds``: each task's kind, which picks its jobs' spread."""
        out = {}
        for t in dists if targets is None else targets:
            if policy == "cost" and t in COSTS:
                allocation = self.cost(t, dists[t], levels.get(t), job, kinds)
            else:
                allocation = value_allocation(dists[t], levels.get(t), alpha)
            out[t] = dataclasses.replace(allocation, value=self.bounds.clamp(t, allocation.value))
        return out

    def cost(
        self,
        target: str,
        dist: ValueDistribution,
        levels: ConformalLevels | None,
        job: JobContext,
        kinds: Sequence[Any] | np.ndarray | None = None,
    ) -> Allocation:
        """The cost-aware allocation of one target, each width at its prices and rules,
        under the target's kill cap."""
        spread = None
        if self.spreads is not None and kinds is not None:
            spread = self.spreads.spread(target, kinds)
        cap, grid = self.allocation.kill_cap(target), self.allocation.grid_points
        parts = []
        for width, rows in self._groups(job):
            take = rows is not None
            part = cost_allocation(
                target, dist.take(rows) if take else dist, levels,
                job.take(rows) if take else job, self.rules[width], self.prices[width], grid,
                spread=spread.take(rows) if take and spread is not None else spread,
                max_kill_probability=cap,
            )  # fmt: skip
            if not take:
                return part
            parts.append((rows, part))
        return _stitched(parts, len(job))

    def scouting(
        self,
        allocations: Mapping[str, Allocation],
        job: JobContext,
        unknown: np.ndarray | None = None,
    ) -> ScoutChoice:
        """Per task whether scouting is cheaper (``allocation.selective``) at its width's
        prices; ``allocations``: the cost-aware ones of the priced targets."""
        priced = {t: a for t, a in allocations.items() if t in COSTS}
        parts = []
        for width, rows in self._groups(job):
            if rows is None:
                return selective(priced, job, self.prices[width], unknown)
            part = {t: _take(a, rows) for t, a in priced.items()}
            seen = None if unknown is None else np.asarray(unknown)[rows]
            parts.append((rows, selective(part, job.take(rows), self.prices[width], seen)))
        return _stitched(parts, len(job))

    def _groups(self, job: JobContext) -> list[tuple[bool, np.ndarray | None]]:
        """(width, its rows) pairs; one pair with rows None where every task has one width
        (a served request's usual case: no copies)."""
        if len(job) == 1:  # a served task: no reductions to make
            return [(bool(job.cores[0] > 1), None)]
        wide = np.asarray(job.cores) > 1
        if len(wide) == 0 or wide.all() or not wide.any():
            return [(bool(len(wide) and wide[0]), None)]
        return [(w, np.flatnonzero(wide == w)) for w in WIDTHS]


def _take(allocation: Allocation, rows: np.ndarray) -> Allocation:
    return Allocation(**{f.name: None if getattr(allocation, f.name) is None
                         else getattr(allocation, f.name)[rows]
                         for f in dataclasses.fields(Allocation)})  # fmt: skip


def _stitched(parts: Sequence[tuple[np.ndarray, Any]], n: int) -> Any:
    """One dataclass of per-task arrays from parts that each cover some rows."""
    kind = type(parts[0][1])
    out = {}
    for field in dataclasses.fields(kind):
        if getattr(parts[0][1], field.name) is None:  # an optional array none carries
            out[field.name] = None
            continue
        first = np.asarray(getattr(parts[0][1], field.name))
        values = np.zeros(n, dtype=first.dtype)
        for rows, part in parts:
            values[rows] = getattr(part, field.name)
        out[field.name] = values
    return kind(**out)
