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
:func:`congestion` of the load the caps carry (``SiteRules.himem_load``/``long_load``):
the scarcer the room, the dearer a core-hour there. The replay's realised priced total
(``replay/priced.py``) sums the same components from what its jobs did.

The rules the *decision* assumes (:meth:`SiteRules.deciding`) differ from the site's in
one place: the memory grace is the one the site guarantees
(``allocation.guaranteed_memory_grace``, default 1: none), not the pilot's observed
``memory_kill_factor``; a job whose need is above its slot is planned as killed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from scoutless.allocation import cost_kernels
from scoutless.config import AllocationSettings, Prices, ReplaySettings
from scoutless.jedi.units import MEMORY_COMPENSATION

#: the load a capped room's price is taken at, at most (a full room: ten times the price)
MAX_LOAD = 0.9


def congestion(load: float) -> float:
    """The price factor of a room (HIMEM, the long queue) whose cap is ``load`` busy on
    average: 1 / (1 - load), the M/M/1 queue's mean time in system over its service time,
    so a core-hour there costs what it keeps others waiting; ``load`` clipped to
    [0, MAX_LOAD]."""
    return 1.0 / (1.0 - min(max(float(load), 0.0), MAX_LOAD))


@dataclass(frozen=True)
class SiteRules:
    """The rules an allocation meets: the kill factor, the standard slot, the queues."""

    memory_kill_factor: float = 2.0
    #: the standard slot's MB per core; a job whose compensated ramCount is above it needs
    #: a HIMEM slot (PanDA matches 90 % of it: up to 2,222 MB/core stays standard)
    standard_mb_per_core: float = 2000.0
    memory_compensation: float = MEMORY_COMPENSATION
    #: a walltime limit above this needs a long queue (None: every queue is long enough)
    short_maxtime_s: float | None = None
    #: the longest queue's maxtime: no limit goes above it, and a walltime kill's retry
    #: runs with it (JEDI's increase_cputime); two days, a common grid queue's maxtime
    max_maxtime_s: float = 172_800.0
    #: a HIMEM slot's MB per core (what a job there holds at least; None: the ramCount)
    himem_mb_per_core: float | None = None
    #: mean busy share of the long queue's and HIMEM's caps (0: free: the plain premium)
    long_load: float = 0.0
    himem_load: float = 0.0
    #: cores of the width's pool, its long queue's cap and its HIMEM cap (inf: a room
    #: without a cap, where no job waits for it), the pool's mean busy share and each
    #: one's mean residual drain of a task, hours (E[S²] ÷ 2 E[S] of the tasks' work
    #: there over its cores): :func:`room_delay_hours` takes a task's wait from them
    pool_cores: float = math.inf
    long_cores: float = math.inf
    himem_cores: float = math.inf
    pool_load: float = 0.0
    pool_residual_h: float = 0.0
    long_residual_h: float = 0.0
    himem_residual_h: float = 0.0

    @classmethod
    def of(cls, replay: ReplaySettings) -> SiteRules:
        """The replay's own numbers: its kill factor, standard and HIMEM slots and the two
        queues' maxtimes (``replay.short_maxtime_s``, ``replay.queue_maxtime_s``)."""
        sizes = sorted({t.mb_per_core for t in replay.resource_types.values()})
        return cls(
            memory_kill_factor=replay.memory_kill_factor,
            standard_mb_per_core=sizes[0],
            short_maxtime_s=replay.short_maxtime_s,
            max_maxtime_s=replay.walltime_limit_s,
            himem_mb_per_core=sizes[1] if len(sizes) > 1 else None,
        )

    def deciding(self, allocation: AllocationSettings) -> SiteRules:
        """The rules a decision assumes: the memory grace the site guarantees
        (``allocation.guaranteed_memory_grace``), not the pilot's observed kill factor."""
        return replace(self, memory_kill_factor=allocation.guaranteed_memory_grace)

    def slot_mb(self, alloc: np.ndarray) -> np.ndarray:
        """MB per core a job of ramCount ``alloc`` holds: at least its slot type's share."""
        if self.himem_mb_per_core is None:
            return np.maximum(alloc, self.standard_mb_per_core)
        himem = alloc > self.standard_mb_per_core / self.memory_compensation
        return np.maximum(alloc, np.where(himem, self.himem_mb_per_core, self.standard_mb_per_core))


@dataclass(frozen=True)
class JobContext:
    """Per task (arrays of one length): what a job of it is, as known at submission."""

    cores: np.ndarray
    #: expected walltime of one job, seconds (the walltime target's median where predicted)
    wall_s: np.ndarray
    #: events per job, HS06 per core, cpuEfficiency (%), baseWalltime (s): getJobMaxWalltime
    nevents: np.ndarray
    core_power: np.ndarray
    cpu_efficiency: np.ndarray
    base_walltime_s: np.ndarray
    #: jobs the task will have (1 where unknown)
    n_jobs: np.ndarray

    def take(self, rows: np.ndarray | slice) -> JobContext:
        return JobContext(**{k: np.asarray(v)[rows] for k, v in self.__dict__.items()})

    def __len__(self) -> int:
        return len(self.cores)


def room_delay_hours(
    rules: SiteRules, room: str, cores: np.ndarray, run_h: np.ndarray, n_jobs: np.ndarray
) -> np.ndarray:
    """Hours one job of ``cores`` × ``run_h`` sent to a capped ``room`` (``"long"``, the
    long queue; ``"himem"``) adds to its task's completion, over the same job in the
    width's pool (broadcast; 0 where the room has no cap).

    In the replay's own terms, a room is one server of its cap's cores that serves tasks
    in turn (PanDA's order: the oldest queued first): a task's jobs there drain in
    cores × run ÷ cap each, after the task has waited for the work queued before it, the
    Pollaczek–Khinchine wait of an M/G/1 queue, load ÷ (1 − load) × the mean residual
    drain of the tasks it serves (``*_residual_h``: E[S²] ÷ 2 E[S] of their drains S),
    shared among the task's ``n_jobs``. The same job in the pool costs the same terms at
    the pool's cores, load and residual; only the excess is the room's."""
    if room == "long":
        cap, load, residual = rules.long_cores, rules.long_load, rules.long_residual_h
    else:
        cap, load, residual = rules.himem_cores, rules.himem_load, rules.himem_residual_h
    if not math.isfinite(cap):
        shape = np.shape(cores)  # broadcast_shapes costs ~5 us; most calls need none
        return np.zeros(
            shape if shape == np.shape(run_h) else np.broadcast_shapes(shape, np.shape(run_h))
        )
    n = np.maximum(n_jobs, 1.0)
    work_h = cores * run_h
    in_room = work_h / cap + _queue_wait_h(load, residual) / n
    in_pool = 0.0
    if math.isfinite(rules.pool_cores):
        in_pool = (
            work_h / rules.pool_cores + _queue_wait_h(rules.pool_load, rules.pool_residual_h) / n
        )
    return np.maximum(in_room - in_pool, 0.0)


def _queue_wait_h(load: float, residual_h: float) -> float:
    """The M/G/1 (Pollaczek–Khinchine) wait: load ÷ (1 − load) × the mean residual
    service, ``load`` clipped as in :func:`congestion`."""
    return (congestion(load) - 1.0) * residual_h


def memory_killed(alloc: np.ndarray, need: np.ndarray, rules: SiteRules) -> np.ndarray:
    """Whether a job needing ``need`` MB/core is killed at ramCount ``alloc``: above the
    grace times what its slot holds (broadcast)."""
    return need > rules.memory_kill_factor * rules.slot_mb(alloc)


def memory_cost(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules, prices: Prices
) -> np.ndarray:
    """Cost of allocating ``alloc`` MB/core (n, a) to jobs needing ``need`` (n, ..., g):
    broadcast; ``job`` arrays are per task (n,)."""
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
    return kill + slack + overuse + himem


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


def cputime_cost(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules, prices: Prices
) -> np.ndarray:
    """Cost of a cpuTime allocation (HS06·s/event): a job runs for the walltime of its need
    and is killed at the limit its allocation sets; shapes as in :func:`memory_cost`."""
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
    return kill + slack + long


def plain_candidates(levels: np.ndarray, rules: SiteRules) -> np.ndarray:
    """(n, c) allocations worth pricing: the quantiles of a job's need themselves."""
    return levels


def _memory_killed(alloc: np.ndarray, need: np.ndarray, job: JobContext,
                   rules: SiteRules) -> np.ndarray:  # fmt: skip
    return memory_killed(alloc, need, rules)


def _compiled_grid(
    target: str, alloc: np.ndarray, need: np.ndarray, job: JobContext
) -> tuple | None:
    """(kernel, grid): the target's compiled kernel and the grid laid out for it
    (:func:`.cost_kernels.outer`); None where the kernel is
    not loaded or the shapes are not the grid's (numpy prices it)."""
    kernel = cost_kernels.kernel(target)
    grid = None if kernel is None else cost_kernels.outer(alloc, need, len(job))
    return None if grid is None else (kernel, grid)


def _memory_compiled(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules, prices: Prices,
    task_args: tuple | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:  # fmt: skip
    """:func:`memory_cost` and :func:`memory_killed` (as 0/1) at once; None
    where the shapes are not the grid's (:func:`.cost_kernels.outer`). ``task_args``:
    :func:`_memory_args` of these job, rules and prices, where made already."""
    compiled = _compiled_grid("memory", alloc, need, job)
    if compiled is None:
        return None
    kernel, (a, x, task, shape) = compiled
    args = _memory_args(job, rules, prices) if task_args is None else task_args
    cost, killed = kernel(a, x, task, *args)
    return cost.reshape(shape), killed.reshape(shape)


def _memory_args(job: JobContext, rules: SiteRules, prices: Prices) -> tuple:
    """The memory kernel's per-task arrays and numbers (all but the grid)."""
    n, per = len(job), cost_kernels.per_task
    hours = job.wall_s / 3600.0
    waits = prices.scout_delay_hour * room_delay_hours(rules, "himem", job.cores, hours,
                                                       job.n_jobs)  # fmt: skip
    himem_mb = rules.himem_mb_per_core
    return (
        per(job.cores, n), per(hours, n), per(waits, n),
        float(rules.standard_mb_per_core), float(himem_mb or 0.0),
        float(rules.standard_mb_per_core / rules.memory_compensation),
        float(rules.memory_kill_factor), float(prices.kill_overhead),
        float(prices.memory_gb_hour), float(prices.memory_overuse_gb_hour),
        float(prices.himem_core_hour * congestion(rules.himem_load)), himem_mb is not None,
    )  # fmt: skip


def _cputime_compiled(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules, prices: Prices,
    task_args: tuple | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:  # fmt: skip
    """:func:`cputime_cost` and :func:`cputime_killed` (as 0/1) at once;
    None where the shapes are not the grid's (:func:`.cost_kernels.outer`). ``task_args``:
    :func:`_cputime_args` of these job, rules and prices, where made already."""
    compiled = _compiled_grid("cputime", alloc, need, job)
    if compiled is None:
        return None
    kernel, (a, x, task, shape) = compiled
    args = _cputime_args(job, rules, prices) if task_args is None else task_args
    cost, killed = kernel(a, x, task, *args)
    return cost.reshape(shape), killed.reshape(shape)


def _cputime_args(job: JobContext, rules: SiteRules, prices: Prices) -> tuple:
    """The cpuTime kernel's per-task arrays and numbers (all but the grid)."""
    n, per = len(job), cost_kernels.per_task
    short = rules.short_maxtime_s
    pool = math.isfinite(rules.pool_cores)
    return (
        per(job.cores, n), per(_per_event(job), n),
        per(job.base_walltime_s, n), per(job.n_jobs, n),
        float(rules.max_maxtime_s), float(prices.kill_overhead),
        float(prices.walltime_slack_core_hour), float(short or 0.0),
        float(prices.long_queue_core_hour * congestion(rules.long_load)),
        float(prices.scout_delay_hour), float(rules.long_cores),
        float(_queue_wait_h(rules.long_load, rules.long_residual_h)), float(rules.pool_cores),
        float(_queue_wait_h(rules.pool_load, rules.pool_residual_h)) if pool else 0.0,
        short is not None, pool,
    )  # fmt: skip


def _per_event(job: JobContext) -> np.ndarray:
    """(n,) ``getJobMaxWalltime``'s seconds per HS06·s/event, as :func:`walltime_limit_s`
    divides it (the same operations, per task)."""
    return job.nevents / (
        np.maximum(job.cores, 1.0) * job.core_power * (job.cpu_efficiency / 100.0)
    )


@dataclass(frozen=True)
class CostModel:
    """One target's per-job cost, the allocations worth pricing and whether a job dies."""

    cost: Callable[[np.ndarray, np.ndarray, JobContext, SiteRules, Prices], np.ndarray]
    candidates: Callable[[np.ndarray, SiteRules], np.ndarray]
    killed: Callable[[np.ndarray, np.ndarray, JobContext, SiteRules], np.ndarray]
    #: ``cost`` and ``killed`` (as 0/1) in one compiled pass, equal bit for bit, or None
    #: for a shape it does not take (:mod:`.cost_kernels`; used where the service loaded
    #: them)
    compiled: Callable[..., tuple[np.ndarray, np.ndarray] | None] | None = None
    #: the compiled pass's per-task arguments (all but the grid), made once by
    #: :meth:`task_args` for the several grids of one decision
    compiled_args: Callable[[JobContext, SiteRules, Prices], tuple] | None = None

    def task_args(self, job: JobContext, rules: SiteRules, prices: Prices) -> tuple | None:
        """What every compiled grid of these tasks passes besides the grid (None where
        nothing is compiled)."""
        if self.compiled_args is None or not cost_kernels.loaded():
            return None
        return self.compiled_args(job, rules, prices)

    def cost_and_killed(
        self, alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules,
        prices: Prices, task_args: tuple | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """``cost`` and ``killed`` of the same grid, compiled where loaded (``task_args``:
        :meth:`task_args` of these job, rules and prices, where made already)."""
        if self.compiled is not None and cost_kernels.loaded():
            both = self.compiled(alloc, need, job, rules, prices, task_args)
            if both is not None:
                return both
        return self.cost(alloc, need, job, rules, prices), self.killed(alloc, need, job, rules)

    def cost_only(
        self, alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules,
        prices: Prices, task_args: tuple | None = None,
    ) -> np.ndarray:  # fmt: skip
        """``cost``, compiled where loaded (``task_args`` as in :meth:`cost_and_killed`)."""
        if self.compiled is not None and cost_kernels.loaded():
            both = self.compiled(alloc, need, job, rules, prices, task_args)
            if both is not None:
                return both[0]
        return self.cost(alloc, need, job, rules, prices)


#: target -> its cost model; the targets allocated as a number
COSTS = {
    "memory": CostModel(memory_cost, memory_candidates, _memory_killed, _memory_compiled,
                        _memory_args),
    "cputime": CostModel(cputime_cost, plain_candidates, cputime_killed, _cputime_compiled,
                         _cputime_args),
}  # fmt: skip


def scout_wait_cost(job: JobContext, prices: Prices) -> np.ndarray:
    """(n,) what the scouts' wait costs a task (core-hours equivalent)."""
    return np.full(len(job), prices.scout_delay_hour * prices.scout_wait_s / 3600.0)
