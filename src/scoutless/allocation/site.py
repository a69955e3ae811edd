"""The site as a decision sees it: its rules (the kill grace, the standard and HIMEM
slots, the queues' maxtimes) and what its capped rooms, HIMEM and the long queue, cost:
a congestion factor on their price and the delay a task waits for them.

The rules the *decision* assumes (:meth:`SiteRules.deciding`) differ from the site's in
one place: the memory grace is the one the site guarantees
(``allocation.guaranteed_memory_grace``, default 1: none), not the pilot's observed
``memory_kill_factor``; a job whose need is above its slot is planned as killed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from scoutless.config import AllocationSettings, ReplaySettings
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
        shape = np.shape(cores)  # most calls need no broadcast_shapes, a Python-level call
        return np.zeros(
            shape if shape == np.shape(run_h) else np.broadcast_shapes(shape, np.shape(run_h))
        )
    n = np.maximum(n_jobs, 1.0)
    work_h = cores * run_h
    in_room = work_h / cap + queue_wait_h(load, residual) / n
    in_pool = 0.0
    if math.isfinite(rules.pool_cores):
        in_pool = (
            work_h / rules.pool_cores + queue_wait_h(rules.pool_load, rules.pool_residual_h) / n
        )
    return np.maximum(in_room - in_pool, 0.0)


def queue_wait_h(load: float, residual_h: float) -> float:
    """The M/G/1 (Pollaczek–Khinchine) wait: load ÷ (1 − load) × the mean residual
    service, ``load`` clipped as in :func:`congestion`."""
    return (congestion(load) - 1.0) * residual_h
