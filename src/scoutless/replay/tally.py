"""A replay's per-task tallies: what each ended attempt adds, and the result they make.

The event loop (``replay/engine.py``) calls :meth:`TaskTally.account_slack` and
:meth:`TaskTally.account_priced` as each attempt ends and :meth:`TaskTally.result` at the
end; the tallies live on the replay itself (a mixin), so the hot loop pays no extra lookup.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from scoutless.replay.result import PRICED_FIELDS, AttemptLog, ReplayResult

if TYPE_CHECKING:
    from scoutless.replay.plan import StrategyPlan
    from scoutless.replay.pool import SlotPool


class TaskTally:
    """Per-task sums of one replay; the engine's per-unit arrays they read are below."""

    plan: StrategyPlan
    pool: SlotPool
    cores: list[int]
    need: list[float]
    wall: list[float]
    need_share: list[float]
    need_himem: list[bool]
    standard_mb: float
    unit_mem_kills: list[int]

    def _tally_state(self, n_t: int) -> None:
        """Per-task sums, all zero."""
        self.mem_kills = [0] * n_t
        self.wall_kills = [0] * n_t
        self.waste = [0.0] * n_t
        self.failed_mb_s = [0.0] * n_t  # memory held by killed attempts
        self.short_kill_core_s = [0.0] * n_t  # walltime kills at the short queue's maxtime
        self.used = [0.0] * n_t
        self.slack = [0.0] * n_t
        self.run_s = [0.0] * n_t
        self.mem_rel = [0.0] * n_t
        self.ok_run_s = [0.0] * n_t
        self.wall_rel = [0.0] * n_t
        self.wall_spare = [0.0] * n_t
        self.scout_ram = [math.nan] * n_t
        self.priced = {key: [0.0] * n_t for key in PRICED_FIELDS if key != "room_delay_s"}
        # the longest queue wait of an attempt in a capped room / in the pool alone
        self.room_wait = [0.0] * n_t
        self.pool_wait = [0.0] * n_t

    def account_slack(
        self, j: int, t: int, runtime: float, alloc: float, limit: float | None
    ) -> None:
        """Memory slack of every attempt; walltime slack of a success (``limit`` None: killed).
        Absolute (MB·s, core·s) and relative, (limit − usage) ÷ limit weighted by seconds."""
        spare_mb = max(alloc - self.need[j], 0.0)
        self.slack[t] += spare_mb * runtime
        self.run_s[t] += runtime
        if alloc > 0:
            self.mem_rel[t] += runtime * spare_mb / alloc
        if limit is not None and limit > 0:
            spare_s = max(limit - runtime, 0.0)
            self.ok_run_s[t] += runtime
            self.wall_rel[t] += runtime * spare_s / limit
            self.wall_spare[t] += self.cores[j] * spare_s

    def account_priced(
        self, j: int, t: int, runtime: float, alloc: float, slot_mb: float, on_long: bool,
        killed: bool,
    ) -> None:  # fmt: skip
        """What the priced total prices of one attempt (``ReplayResult.priced_*``)."""
        core_s = self.cores[j] * runtime
        priced = self.priced
        if slot_mb > self.standard_mb or self.need_himem[j]:
            priced["himem_core_s"][t] += core_s
        if on_long:
            priced["long_core_s"][t] += core_s
        if killed:
            priced["killed_job_core_s"][t] += self.cores[j] * self.wall[j]
            return
        held_anyway = max(self.need[j], self.need_share[j])
        priced["priced_slack_mb_s"][t] += max(alloc - held_anyway, 0.0) * runtime
        priced["overuse_mb_s"][t] += max(self.need[j] - alloc, 0.0) * runtime

    def account_wait(self, t: int, wait_s: float, in_room: bool) -> None:
        """An attempt's queue wait (queued → started), in a capped room (the long queue, a
        HIMEM slot) or in the pool alone."""
        waits = self.room_wait if in_room else self.pool_wait
        if wait_s > waits[t]:
            waits[t] = wait_s

    def result(self) -> ReplayResult:
        arr = np.asarray
        status = arr(self.state)
        return ReplayResult(
            name=self.plan.name,
            first_production_s=arr(self.first_prod, dtype=float),
            completion_s=arr(self.completion, dtype=float),
            status=status,
            memory_kills=arr(self.mem_kills),
            walltime_kills=arr(self.wall_kills),
            wasted_core_s=arr(self.waste),
            used_core_s=arr(self.used),
            slack_mb_s=arr(self.slack),
            scout_ram=arr(self.scout_ram, dtype=float),
            attempts=arr(self.attempts),
            unit_memory_kills=arr(self.unit_mem_kills),
            failed_mb_s=arr(self.failed_mb_s),
            short_kill_core_s=arr(self.short_kill_core_s),
            first_ok=arr(self.first_ok, dtype=bool),
            failed=arr(self.failed, dtype=bool),
            n_events=self.n_events,
            info=self.pool.info(),
            run_s=arr(self.run_s),
            memory_slack_rel_s=arr(self.mem_rel),
            ok_run_s=arr(self.ok_run_s),
            walltime_slack_rel_s=arr(self.wall_rel),
            walltime_slack_core_s=arr(self.wall_spare),
            final_ram=arr(self.task_ram, dtype=float),
            final_cputime=arr(self.task_cpu, dtype=float),
            canary=self.plan.canary,
            attempt_log=None if self.log is None else AttemptLog.of(self.log),
            sizing={} if self.plan.sizer is None else self.plan.sizer.summary(),
            **{key: arr(values, dtype=float) for key, values in self.priced.items()},
            room_delay_s=np.maximum(arr(self.room_wait) - arr(self.pool_wait), 0.0),
        )
