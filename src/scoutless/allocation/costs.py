"""What an allocation costs at a PanDA site, per job, in core-hours.

The replay's rules (``replay/rules.py``: the pilot's memory kill at k × the allocation,
``getJobMaxWalltime``, the queues' maxtime) are the site; the prices
(``Settings.allocation.prices``) say what each outcome is worth. Expected costs are taken
over a task's value distribution evaluated at a fixed grid of its quantiles, so the same
code prices a model's calibrated distribution and the generator's exact one.

The ``need`` a cost is taken over is a *job's*: the task's value times a factor of the
spread of a task's jobs around it (:class:`~scoutless.allocation.values.JobSpread`, learnt
from a history's jobs; without one every job needs the task's value). A killed attempt
costs the core-hours it ran plus ``kill_overhead`` times the job's full core-hours (the
retry waits and runs again: the task is late by a job); a need above the allocation but
within the grace pays for the memory it takes from other jobs; slack is what the slot
holds above what the slot the need itself requires would hold (a slot gives its type's MB
a core whatever is asked); a need above the standard slot's share takes HIMEM-class memory
whichever slot it sits in. HIMEM and long-queue core-hours pay their premium times
:func:`.site.congestion` of the load the caps carry (``SiteRules.himem_load``/``long_load``):
the scarcer the room, the dearer a core-hour there.

**The price components are defined here, once**: :data:`PRICE_OF` names each and its
price; :func:`memory_components` and :func:`cputime_components` give what a decision
expects of each (numpy: the definition, and the oracle the compiled kernels of
:mod:`.jit_costs` are checked against component by component), :func:`realised_components`
what the replay's jobs made of each (``replay/priced.py`` sums them into its priced total).
Expected, a room's wait is priced inside its premium (``himem``, ``long_queue``); realised,
it is measured apart (``room_delay``).

The site's rules, and what its capped rooms cost, are :mod:`.site`; the same costs priced
by the compiled kernels, :mod:`.compiled_costs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from scoutless.allocation import cost_kernels
from scoutless.allocation.compiled_costs import compiled_grid, grid_args
from scoutless.allocation.context import JobContext
from scoutless.allocation.site import SiteRules, congestion, room_delay_hours
from scoutless.config import Prices

#: every price component, in the order the replay's tables show them -> the
#: ``Settings.allocation.prices`` field that prices it
PRICE_OF: dict[str, str] = {
    "kills": "kill_overhead", "memory_slack": "memory_gb_hour",
    "memory_overuse": "memory_overuse_gb_hour", "himem": "himem_core_hour",
    "long_queue": "long_queue_core_hour", "walltime_slack": "walltime_slack_core_hour",
    "scout_wait": "scout_delay_hour", "room_delay": "scout_delay_hour",
}  # fmt: skip
HOUR = 3600.0
GB_HOUR = 1024.0 * HOUR


def memory_killed(alloc: np.ndarray, need: np.ndarray, rules: SiteRules) -> np.ndarray:
    """Whether a job needing ``need`` MB/core is killed at ramCount ``alloc``: above the
    grace times what its slot holds (broadcast)."""
    return need > rules.memory_kill_factor * rules.slot_mb(alloc)


def memory_components(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules, prices: Prices
) -> dict[str, np.ndarray]:
    """Each component of the cost of allocating ``alloc`` MB/core (n, a) to jobs needing
    ``need`` (n, ..., g): broadcast; ``job`` arrays are per task (n,). ``himem`` holds
    the HIMEM room's expected wait (the replay reports it apart, as ``room_delay``)."""
    extra = (1,) * (need.ndim - 1)
    cores = job.cores.reshape(-1, *extra)
    hours = (job.wall_s / 3600.0).reshape(-1, *extra)
    held = rules.slot_mb(alloc)
    limit = rules.memory_kill_factor * held
    killed = need > limit
    ran = np.where(killed, np.minimum(1.0, limit / np.maximum(need, 1e-9)), 1.0)
    kill = np.where(killed, (ran + prices.kill_overhead) * cores * hours, 0.0)
    # slack: above what the slot the need itself requires holds anyway
    slack_gb = np.maximum(held - rules.slot_mb(need), 0.0) / 1024.0
    slack = np.where(killed, 0.0, prices.memory_gb_hour * slack_gb * cores * hours)
    over_gb = np.where(killed, 0.0, np.maximum(need - held, 0.0) / 1024.0)
    overuse = prices.memory_overuse_gb_hour * over_gb * cores * hours
    # HIMEM-class memory: the allocation's slot, or the need's (after a kill the retry is
    # raised to it; within a grace the job holds it in a standard slot all the same)
    himem_border = rules.standard_mb_per_core / rules.memory_compensation
    himem_slot = np.maximum(need, alloc) > himem_border
    himem_price = prices.himem_core_hour * congestion(rules.himem_load)
    n_jobs = job.n_jobs.reshape(-1, *extra)
    waits = prices.scout_delay_hour * room_delay_hours(rules, "himem", cores, hours, n_jobs)
    himem = np.where(himem_slot, himem_price * cores * hours + waits, 0.0)
    return {"kills": kill, "memory_slack": slack, "memory_overuse": overuse, "himem": himem}


def memory_cost(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules, prices: Prices
) -> np.ndarray:
    """The sum of :func:`memory_components`."""
    return total(memory_components(alloc, need, job, rules, prices))


def total(components: dict[str, np.ndarray]) -> np.ndarray:
    """The components summed in their order (the compiled kernels add them alike)."""
    parts = iter(components.values())
    out = next(parts)
    for part in parts:
        out = out + part
    return out


def memory_candidates(levels: np.ndarray, rules: SiteRules) -> np.ndarray:
    """(n, c) allocations worth pricing: quantiles of a job's need (``levels``, (n, l)),
    the most a standard slot takes (the HIMEM border), and, only where the site guarantees
    a grace above 1, the least each quantile survives with (need ÷ grace)."""
    standard = np.full((len(levels), 1), rules.standard_mb_per_core / rules.memory_compensation)
    parts = [levels, standard]
    if rules.memory_kill_factor > 1:
        parts.insert(0, levels / rules.memory_kill_factor)
    return np.concatenate(parts, axis=1)  # hstack of 2-d arrays, without its checks


def walltime_limit_s(cputime: np.ndarray, job: JobContext, extra: tuple[int, ...]) -> np.ndarray:
    """``getJobMaxWalltime`` of cpuTime values broadcast against per-task job arrays."""
    shape = (-1, *extra)
    per_event = job.nevents.reshape(shape) / (
        np.maximum(job.cores, 1.0).reshape(shape)
        * job.core_power.reshape(shape)
        * (job.cpu_efficiency.reshape(shape) / 100.0)
    )
    return cputime * per_event + job.base_walltime_s.reshape(shape)


def cputime_killed(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules
) -> np.ndarray:
    """Whether a job needing cpuTime ``need`` outruns the walltime limit of ``alloc``."""
    extra = (1,) * (need.ndim - 1)
    limit = np.minimum(walltime_limit_s(alloc, job, extra), rules.max_maxtime_s)
    return walltime_limit_s(need, job, extra) > limit


def cputime_components(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules, prices: Prices
) -> dict[str, np.ndarray]:
    """Each component of the cost of a cpuTime allocation (HS06·s/event): a job runs for
    the walltime of its need and is killed at the limit its allocation sets; shapes as in
    :func:`memory_components` (``long_queue`` holds the long room's expected wait)."""
    extra = (1,) * (need.ndim - 1)
    cores = job.cores.reshape(-1, *extra)
    limit = np.minimum(walltime_limit_s(alloc, job, extra), rules.max_maxtime_s)
    runs = walltime_limit_s(need, job, extra)
    killed = runs > limit
    kill = np.where(killed, cores * (limit + prices.kill_overhead * runs) / 3600.0, 0.0)
    # a killed job is retried with the longest queue's maxtime (increase_cputime)
    held = np.where(killed, rules.max_maxtime_s, limit)
    slack_h = np.maximum(held - runs, 0.0) / 3600.0
    slack = prices.walltime_slack_core_hour * cores * slack_h
    long = 0.0
    if rules.short_maxtime_s is not None:
        on_long = held > rules.short_maxtime_s
        price = prices.long_queue_core_hour * congestion(rules.long_load)
        n_jobs = job.n_jobs.reshape(-1, *extra)
        waits = room_delay_hours(rules, "long", cores, runs / 3600.0, n_jobs)
        long = np.where(on_long, price * cores * runs / 3600.0
                        + prices.scout_delay_hour * waits, 0.0)  # fmt: skip
    return {"kills": kill, "walltime_slack": slack, "long_queue": long}


def cputime_cost(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules, prices: Prices
) -> np.ndarray:
    """The sum of :func:`cputime_components`."""
    return total(cputime_components(alloc, need, job, rules, prices))


def plain_candidates(levels: np.ndarray, rules: SiteRules) -> np.ndarray:
    """(n, c) allocations worth pricing: the quantiles of a job's need themselves."""
    return levels


def _memory_killed(alloc: np.ndarray, need: np.ndarray, job: JobContext,
                   rules: SiteRules) -> np.ndarray:  # fmt: skip
    return memory_killed(alloc, need, rules)


#: what one target's components take and give
Components = Callable[[np.ndarray, np.ndarray, JobContext, SiteRules, Prices],
                      dict[str, np.ndarray]]  # fmt: skip


@dataclass(frozen=True)
class CostModel:
    """One target's per-job cost, the allocations worth pricing and whether a job dies;
    the cost is the sum of ``components`` (named as :data:`PRICE_OF` names them, in
    ``names``' order), priced by the compiled kernels where they are loaded and price the
    same components (:mod:`.compiled_costs`), else in numpy."""

    target: str
    components: Components
    #: the keys ``components`` gives, in the order they are summed
    names: tuple[str, ...]
    candidates: Callable[[np.ndarray, SiteRules], np.ndarray]
    killed: Callable[[np.ndarray, np.ndarray, JobContext, SiteRules], np.ndarray]

    def cost(
        self, alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules,
        prices: Prices,
    ) -> np.ndarray:  # fmt: skip
        """The components' sum, in numpy (the definition)."""
        return total(self.components(alloc, need, job, rules, prices))

    def compiled(
        self, alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules,
        prices: Prices, task_args: Any = None,
    ) -> tuple[np.ndarray, np.ndarray] | None:  # fmt: skip
        """``cost`` and ``killed`` (as 0/1) in one compiled pass, equal bit for bit; None
        where no kernel prices these components or the shapes are not the grid's."""
        return compiled_grid(self.target, self.names, alloc, need, job, rules, prices,
                             task_args)  # fmt: skip

    def task_args(self, job: JobContext, rules: SiteRules, prices: Prices) -> Any:
        """What every compiled grid of these tasks passes besides the grid, made once for
        the several grids of one decision (None where nothing is compiled)."""
        if cost_kernels.kernel(self.target, self.names) is None:
            return None
        return grid_args(self.target, job, rules, prices)

    def cost_and_killed(
        self, alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules,
        prices: Prices, task_args: Any = None,
    ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """``cost`` and ``killed`` of the same grid, compiled where loaded (``task_args``:
        :meth:`task_args` of these job, rules and prices, where made already)."""
        both = self.compiled(alloc, need, job, rules, prices, task_args)
        if both is not None:
            return both
        return self.cost(alloc, need, job, rules, prices), self.killed(alloc, need, job, rules)

    def cost_only(
        self, alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules,
        prices: Prices, task_args: Any = None,
    ) -> np.ndarray:  # fmt: skip
        """``cost``, compiled where loaded (``task_args`` as in :meth:`cost_and_killed`)."""
        both = self.compiled(alloc, need, job, rules, prices, task_args)
        return self.cost(alloc, need, job, rules, prices) if both is None else both[0]


#: target -> its cost model; the targets allocated as a number
COSTS = {
    "memory": CostModel("memory", memory_components,
                        ("kills", "memory_slack", "memory_overuse", "himem"),
                        memory_candidates, _memory_killed),
    "cputime": CostModel("cputime", cputime_components,
                         ("kills", "walltime_slack", "long_queue"),
                         plain_candidates, cputime_killed),
}  # fmt: skip


def scout_wait_cost(job: JobContext, prices: Prices) -> np.ndarray:
    """(n,) what the scouts' wait costs a task (core-hours equivalent)."""
    return np.full(len(job), prices.scout_delay_hour * prices.scout_wait_s / 3600.0)


def memory_kill_in_gb_hours(prices: Prices) -> float:
    """A memory kill of one core-hour (its run and the retry's ``kill_overhead``) in
    GB-hours of memory slack: the exchange rate an engine that sizes memory alone prices a
    kill at (``replay/traces.py``'s online strategy)."""
    return (1.0 + prices.kill_overhead) / max(prices.memory_gb_hour, 1e-9)


def memory_overuse_in_slack(prices: Prices) -> float:
    """A GB-hour used above the allocation within the pilot's grace in GB-hours of memory
    slack: what an engine that sizes memory alone charges a need that runs on there."""
    return prices.memory_overuse_gb_hour / max(prices.memory_gb_hour, 1e-9)


def walltime_prices(prices: Prices) -> tuple[float, float]:
    """A walltime's prices for a sizer that sizes it alone (``sizing/resources.py``): the
    slack per core-hour of limit above the run, and a kill's restart overhead (× the run)."""
    return prices.walltime_slack_core_hour, prices.kill_overhead


def realised_components(
    done: Any, price: Mapping[str, np.ndarray], congested: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Per task, each component of :data:`PRICE_OF` in core-hours, from what its jobs did:
    ``done``, the replay's per-task sums (``ReplayResult``'s ``wasted_core_s``,
    ``killed_job_core_s``, ``priced_slack_mb_s``, ``overuse_mb_s``, ``himem_core_s``,
    ``long_core_s``, ``walltime_slack_core_s``, ``scout_wait_s``, ``room_delay_s``), at
    ``price`` (per task, each Prices field) and ``congested`` (per task, the ``himem`` and
    ``long_queue`` rooms' :func:`.site.congestion` factor)."""
    p = price
    wasted_h = done.wasted_core_s / HOUR
    return {
        "kills": wasted_h + p["kill_overhead"] * done.killed_job_core_s / HOUR,
        "memory_slack": p["memory_gb_hour"] * done.priced_slack_mb_s / GB_HOUR,
        "memory_overuse": p["memory_overuse_gb_hour"] * done.overuse_mb_s / GB_HOUR,
        "himem": p["himem_core_hour"] * congested["himem"] * done.himem_core_s / HOUR,
        "long_queue": p["long_queue_core_hour"] * congested["long_queue"] * done.long_core_s / HOUR,
        "walltime_slack": p["walltime_slack_core_hour"] * done.walltime_slack_core_s / HOUR,
        "scout_wait": p["scout_delay_hour"] * done.scout_wait_s / HOUR,
        "room_delay": p["scout_delay_hour"] * done.room_delay_s / HOUR,
    }
