"""The pool of job slots: cores per PanDA resource type, each with its own queue.

A job waits in the queue of its resource type (single/multi-core × the memory class that
holds its ramCount) and starts when enough cores are free there. Queues are first come,
first served, scouts first when PanDA's scout priority is on; the head of a queue waits
for its cores (no back-filling), as a pilot's slot does.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from scoutless.replay import rules
from scoutless.replay.config import ResourceType


class PoolError(ValueError):
    """A pool that cannot run the workload (names the resource type and its config key)."""


class SlotPool:
    """Free cores and a waiting queue per resource type."""

    def __init__(self, types: Mapping[str, ResourceType], cores: Mapping[str, int]) -> None:
        ordered = sorted(types.items(), key=lambda item: (item[1].mb_per_core, item[0]))
        self.types = [(name, t.mb_per_core, t.multicore) for name, t in ordered]
        self.capacity = [int(cores[name]) for name, _, _ in self.types]
        self.free = list(self.capacity)
        self.queues: list[list[tuple[int, int, int, float]]] = [[] for _ in self.types]
        self.type_of: dict[int, int] = {}
        self.seq = 0
        self.peak_queued = 0
        self.started = [0] * len(self.types)

    def enqueue(
        self, unit: int, cores: float, ram_mb_per_core: float, first: bool
    ) -> list[tuple[int, float]]:
        """Queue a unit; returns the units that start now as (unit, slot MB per core)."""
        i = rules.resource_type(cores, ram_mb_per_core, self.types)
        need = int(cores)
        if need > self.capacity[i]:
            name = self.types[i][0]
            raise PoolError(
                f"replay.resource_types.{name}.cores = {self.capacity[i]} is smaller than a "
                f"{need}-core job: no slot can ever run it"
            )
        self.seq += 1
        heapq.heappush(self.queues[i], (0 if first else 1, self.seq, unit, cores))
        self.peak_queued = max(self.peak_queued, len(self.queues[i]))
        return self._dispatch(i)

    def release(self, unit: int, cores: float) -> list[tuple[int, float]]:
        """A unit ended: free its cores; returns the units that start now."""
        i = self.type_of.pop(unit)
        self.free[i] += int(cores)
        return self._dispatch(i)

    def _dispatch(self, i: int) -> list[tuple[int, float]]:
        queue, started = self.queues[i], []
        while queue and int(queue[0][3]) <= self.free[i]:
            _, _, unit, cores = heapq.heappop(queue)
            self.free[i] -= int(cores)
            self.type_of[unit] = i
            started.append((unit, self.types[i][1]))
        self.started[i] += len(started)
        return started

    def info(self) -> dict[str, float]:
        out: dict[str, float] = {"peak_queued": float(self.peak_queued)}
        for (name, _, _), capacity, started in zip(
            self.types, self.capacity, self.started, strict=True
        ):
            out[f"{name}.cores"] = float(capacity)
            out[f"{name}.jobs_started"] = float(started)
        return out
