"""What one strategy's replay hands back: per-task and per-unit outcomes, every attempt.

The task states (``SCOUTING`` … ``EXHAUSTED``) are those of ``ReplayResult.status``; the
priced fields are what the priced total (``replay/priced.py``) reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scoutless.replay.plan import CanaryDraw

#: ReplayResult's per-task arrays that the priced total reads
PRICED_FIELDS = (
    "killed_job_core_s", "priced_slack_mb_s", "overuse_mb_s", "himem_core_s", "long_core_s",
    "scout_wait_s", "room_delay_s",
)  # fmt: skip
SCOUTING, RUNNING, BROKEN, EXHAUSTED = 0, 1, 2, 3


@dataclass(frozen=True)
class AttemptLog:
    """Every attempt a replay ran, in the order they ended (replay clock seconds, MB)."""

    unit: np.ndarray
    attempt: np.ndarray  # 1 for a first attempt
    queued_s: np.ndarray  # released to the pool (PanDA's creationtime)
    start_s: np.ndarray
    end_s: np.ndarray
    outcome: np.ndarray  # rules.SUCCESS, MEMORY_KILL, WALLTIME_KILL
    alloc_mb: np.ndarray  # the job's memory allocation (minramcount)
    limit_s: np.ndarray  # its walltime limit (maxwalltime)

    @staticmethod
    def of(rows: list[tuple[int, int, float, float, float, int, float, float]]) -> AttemptLog:
        cols = list(zip(*rows, strict=True)) if rows else [()] * 8
        kinds = (np.int64, np.int64, float, float, float, np.int64, float, float)
        return AttemptLog(*(np.asarray(c, dtype=k) for c, k in zip(cols, kinds, strict=True)))


@dataclass
class ReplayResult:
    """Per-task and per-unit outcomes of one strategy's replay (seconds, MB)."""

    name: str
    first_production_s: np.ndarray  # per task: submission → first production job start
    completion_s: np.ndarray  # per task: submission → last job resolved (NaN: never)
    status: np.ndarray  # per task: RUNNING (completed), BROKEN, EXHAUSTED
    memory_kills: np.ndarray  # per task
    walltime_kills: np.ndarray
    wasted_core_s: np.ndarray
    used_core_s: np.ndarray
    slack_mb_s: np.ndarray
    scout_ram: np.ndarray  # per task: ramCount derived from the scouts (NaN: none)
    attempts: np.ndarray  # per unit
    first_ok: np.ndarray  # per unit: succeeded on its first attempt
    failed: np.ndarray  # per unit: ran out of attempts
    n_events: int = 0
    info: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0  # wall time of the replay
    # per task, for the relative slack (Autopilot's (limit - usage) / limit, time-weighted)
    run_s: np.ndarray = field(default_factory=lambda: np.zeros(0))  # attempts' seconds
    memory_slack_rel_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ok_run_s: np.ndarray = field(default_factory=lambda: np.zeros(0))  # successes' seconds
    walltime_slack_rel_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    walltime_slack_core_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # per task: ramCount and cpuTime the task ended with (what JEDI's task row holds)
    final_ram: np.ndarray = field(default_factory=lambda: np.zeros(0))
    final_cputime: np.ndarray = field(default_factory=lambda: np.zeros(0))
    canary: CanaryDraw | None = None  # the plan's
    attempt_log: AttemptLog | None = None  # plan.record only
    sizing: dict[str, float] = field(default_factory=dict)  # plan.sizer's summary
    #: per unit, its attempts killed for memory; per task, MB·s the killed attempts held
    unit_memory_kills: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    failed_mb_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: per task, core·s of attempts killed at the short queue's maxtime: a limit the
    #: queue cut, chosen when the job was released (a task's production jobs are all
    #: released at once, routed by what was known then)
    short_kill_core_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: per task, what the priced total (``replay/priced.py``) prices: each kill's job at
    #: full length (core·s), memory held above max(need, the share of the slot its need
    #: requires) and used above the allocation by surviving attempts (MB·s), core·s in
    #: HIMEM slots or of HIMEM-class needs and on the long queue, and the wait for the
    #: scouts (submission → avalanche, s); and how much longer its attempts in a capped
    #: room (the long queue, a HIMEM slot) waited than those in the pool alone (the
    #: longest queue wait of each kind, s)
    killed_job_core_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    priced_slack_mb_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    overuse_mb_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    himem_core_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    long_core_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    scout_wait_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    room_delay_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
