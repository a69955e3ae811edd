"""The site's job slots: a pool of cores per width, HIMEM and long-queue caps, PanDA's order.

- **Cores.** Single- and multi-core jobs each have a pool of cores: the ``cores`` of the
  width's standard resource type (the least MB/core; SCORE, MCORE). A job goes to the
  resource type whose memory class holds its ramCount (``rules.resource_type``).
- **Memory is bounded per slot.** A HIMEM type runs on the same cores, but at most its
  ``cores`` at once: ``himem_share`` of the pool unless configured, as a PanDA queue's
  ``uconfig.resource_type_limits`` caps HIMEM in cores (panda-server ``worker_module``,
  ``get_average_memory_workers`` / the ``HIMEM`` limit; default derived in
  docs/concepts/replay-site.md from a queue's ``meanrss``).
- **Walltime.** A job whose walltime limit exceeds the short queue's maxtime can only run
  on the long queue (JEDI's brokerage skips a queue whose maxtime is below the job's
  walltime, ``AtlasProdJobBroker``: ``criteria=-shortwalltime``); long-queue jobs hold at
  most ``long_queue_share`` of the pool at once. Short jobs may use any free core.
- **Order.** Among the queues a freed core can serve, the job with the highest priority
  starts first, the oldest (lowest PandaID, here: queued first) among equals, as PanDA's
  dispatcher sorts (``ORDER BY currentpriority desc, pandaid asc``, see
  :mod:`scoutless.jedi.priorities`). A queue whose cap is full is passed over, as the
  dispatcher skips a capped resource type; the best job that is not capped waits for its
  cores (no back-filling), as a pilot's slot does.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping

import numpy as np

from scoutless.allocation.decider import standard_types  # the decision prices by it
from scoutless.replay import rules
from scoutless.replay.config import ReplaySettings, ResourceType
from scoutless.replay.workload import Workload

#: key suffix of a pool's long-queue cap in :func:`pool_cores`' mapping
LONG = ".long"
UNCAPPED = 1 << 62  # a cap that never binds


class PoolError(ValueError):
    """A pool that cannot run the workload (names the resource type and its config key)."""


def _capped(share: float, pool: int, biggest: int) -> int:
    """A cap of ``share`` of a pool: at least the widest job when there is any share."""
    if share <= 0:
        return 0
    return min(pool, max(math.ceil(share * pool - 1e-9), biggest))


def pool_cores(work: Workload, cfg: ReplaySettings) -> dict[str, int]:
    """Cores per resource type (standard: the width's pool; HIMEM: its cap) and, under
    ``<standard>.long``, the long queue's cap.

    A pool without configured ``cores`` gets the whole load of its width divided by
    ``target_utilisation``; HIMEM gets ``himem_share`` of it unless configured.
    """
    busy = work.cores * work.wall_s
    span = float(work.submit_s.max() - work.submit_s.min()) + float(np.median(work.wall_s))
    standard = standard_types(cfg.resource_types)
    pools: dict[bool, int] = {}
    biggest: dict[bool, int] = {}
    for multicore, name in standard.items():
        same_width = (work.cores > 1) == multicore
        biggest[multicore] = int(work.cores[same_width].max()) if same_width.any() else 1
        configured = cfg.resource_types[name].cores
        if configured is not None:
            pools[multicore] = configured
            continue
        load = float(busy[same_width].sum()) / span / cfg.target_utilisation if span > 0 else 0.0
        pools[multicore] = max(math.ceil(load), biggest[multicore])
    cores: dict[str, int] = {}
    for name, rtype in cfg.resource_types.items():
        pool, width = pools[rtype.multicore], biggest[rtype.multicore]
        if name == standard[rtype.multicore]:
            cores[name] = pool
        else:
            cores[name] = rtype.cores or _capped(cfg.himem_share, pool, width)
    if cfg.short_maxtime_s is not None:
        for multicore, name in standard.items():
            cores[name + LONG] = _capped(cfg.long_queue_share, pools[multicore], biggest[multicore])
    return cores


class SlotPool:
    """Free cores per width, capped types, and one priority queue per (type, short/long)."""

    def __init__(self, types: Mapping[str, ResourceType], cores: Mapping[str, int]) -> None:
        ordered = sorted(types.items(), key=lambda item: (item[1].mb_per_core, item[0]))
        self.types = [(name, t.mb_per_core, t.multicore) for name, t in ordered]
        standard = standard_types(types)
        self.standard = [standard[False], standard[True]]  # per group: 0 single, 1 multi
        self.group = [int(multi) for _, _, multi in self.types]
        self.capacity = [int(cores[name]) for name in self.standard]
        self.free = list(self.capacity)
        self.is_standard = [name in self.standard for name, _, _ in self.types]
        # cores a type may hold at once: a HIMEM type its cap, a standard one no cap (UNCAPPED)
        self.cap = [
            UNCAPPED if std else int(cores[name])
            for (name, _, _), std in zip(self.types, self.is_standard, strict=True)
        ]
        self.held = [0] * len(self.types)  # cores running per type
        self.long_cap = [int(cores.get(name + LONG, UNCAPPED)) for name in self.standard]
        self.long_held = [0, 0]
        # queue q = 2 * type + long; heap entries (-priority, sequence, unit, cores)
        self.queues: list[list[tuple[int, int, int, int]]] = [[] for _ in range(2 * len(ordered))]
        # per group: (queue, its index, its type, on the long queue) for every queue it serves
        self.group_queues = [
            [
                (self.queues[q], q, q // 2, q % 2 == 1)
                for q in range(len(self.queues))
                if self.group[q // 2] == g
            ]
            for g in (0, 1)
        ]
        # the widest job each queue can ever start (its pool, its type's cap, the long cap)
        self.widest = [self._widest(q // 2, bool(q % 2)) for q in range(len(self.queues))]
        self.queue_of: dict[int, int] = {}
        self.seq = 0
        self.peak_queued = 0
        self.started = [0] * len(self.queues)

    def enqueue(
        self, unit: int, cores: float, ram_mb_per_core: float, priority: int, long: bool = False
    ) -> list[tuple[int, float, bool]]:
        """Queue a unit; returns the units that start now as (unit, slot MB/core, on long)."""
        i = rules.resource_type(cores, ram_mb_per_core, self.types)
        need = int(cores)
        if need > self.widest[2 * i + long]:
            self._refuse(i, need, long)
        self.seq += 1
        queue = self.queues[2 * i + long]
        heapq.heappush(queue, (-priority, self.seq, unit, need))
        self.peak_queued = max(self.peak_queued, len(queue))
        return self._dispatch(self.group[i])

    def _widest(self, i: int, long: bool) -> float:
        g = self.group[i]
        return float(
            min(self.capacity[g], self.cap[i], self.long_cap[g] if long else self.capacity[g])
        )

    def _refuse(self, i: int, need: int, long: bool) -> None:
        """Raise the error that names the key which leaves no slot for the job."""
        g = self.group[i]
        name, std = self.types[i][0], self.standard[g]
        if need > self.capacity[g]:
            raise PoolError(
                f"replay.resource_types.{std}.cores = {self.capacity[g]} is smaller than a "
                f"{need}-core job: no slot can ever run it"
            )
        cap = self.cap[i]
        if need > cap:
            raise PoolError(
                f"replay.himem_share (or replay.resource_types.{name}.cores) leaves {name} "
                f"{cap} cores, fewer than a {need}-core job that needs its memory"
            )
        long_cap = self.long_cap[g]
        if long and need > long_cap:
            raise PoolError(
                f"replay.long_queue_share leaves the long queue of {std} {long_cap} cores, "
                f"fewer than a {need}-core job whose walltime exceeds replay.short_maxtime_s"
            )

    def release(self, unit: int, cores: float) -> list[tuple[int, float, bool]]:
        """A unit ended: free its cores; returns the units that start now."""
        q = self.queue_of.pop(unit)
        i, g, need = q // 2, self.group[q // 2], int(cores)
        self.free[g] += need
        self.held[i] -= need
        if q % 2:
            self.long_held[g] -= need
        return self._dispatch(g)

    def _best(self, g: int) -> tuple[list[tuple[int, int, int, int]], int, int, bool] | None:
        """The queue whose head goes next: highest priority, then oldest; capped ones skipped."""
        best, best_head = None, None
        held, cap = self.held, self.cap
        long_room = self.long_cap[g] - self.long_held[g]
        for entry in self.group_queues[g]:
            queue, _, i, long = entry
            if not queue:
                continue
            head = queue[0]
            need = head[3]
            if held[i] + need > cap[i] or (long and need > long_room):
                continue  # capped: passed over
            if best_head is None or head < best_head:
                best, best_head = entry, head
        return best

    def _dispatch(self, g: int) -> list[tuple[int, float, bool]]:
        started: list[tuple[int, float, bool]] = []
        free = self.free
        while free[g] > 0 and (best := self._best(g)) is not None:
            queue, q, i, long = best
            need = queue[0][3]
            if need > free[g]:
                break  # the best job waits for its cores
            unit = heapq.heappop(queue)[2]
            free[g] -= need
            self.held[i] += need
            if long:
                self.long_held[g] += need
            self.queue_of[unit] = q
            self.started[q] += 1
            started.append((unit, self.types[i][1], long))
        return started

    def info(self) -> dict[str, float]:
        out: dict[str, float] = {"peak_queued": float(self.peak_queued)}
        for i, (name, _, _) in enumerate(self.types):
            g = self.group[i]
            out[f"{name}.cores"] = float(self.capacity[g] if self.is_standard[i] else self.cap[i])
            out[f"{name}.jobs_started"] = float(self.started[2 * i] + self.started[2 * i + 1])
            out[f"{name}.long_jobs_started"] = float(self.started[2 * i + 1])
        for g, name in enumerate(self.standard):
            if self.long_cap[g] != UNCAPPED:
                out[f"{name}{LONG}.cores"] = float(self.long_cap[g])
        return out
