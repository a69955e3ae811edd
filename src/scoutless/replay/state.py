"""The per-unit and per-task state one replay runs on: the workload's and the plan's
numbers as plain lists (the event loop indexes them a few million times; a list item is
cheaper to read than a numpy scalar), the slot each unit's own need takes, its priority,
and the counters of each task, all set up before the first event.
"""

from __future__ import annotations

import math
from array import array

import numpy as np

from scoutless.jedi.priorities import job_priority
from scoutless.replay import rules
from scoutless.replay.config import ReplaySettings
from scoutless.replay.ladder import FileLedger, RetryRam
from scoutless.replay.plan import StrategyPlan
from scoutless.replay.pool import SlotPool
from scoutless.replay.result import RUNNING, SCOUTING
from scoutless.replay.tally import TaskTally
from scoutless.replay.workload import TaskEstimator, Workload


def _per_unit(values: np.ndarray | None, n_units: int) -> list[float | None]:
    """A plan's per-unit numbers as the replay's lists (None each: the task's own)."""
    return [None] * n_units if values is None else values.astype(float).tolist()


class ReplayState(TaskTally):
    """One replay's state, as the event loop (:class:`scoutless.replay.engine.Replay`)
    reads and moves it."""

    def __init__(
        self,
        work: Workload,
        plan: StrategyPlan,
        cfg: ReplaySettings,
        pool: SlotPool,
        estimator: TaskEstimator,
    ) -> None:
        self.w, self.plan, self.cfg, self.pool, self.estimate = work, plan, cfg, pool, estimator
        n_t, n_j = work.n_tasks, work.n_jobs
        self.task_ram = plan.ram.astype(float).tolist()
        self.task_cpu = plan.cputime.astype(float).tolist()
        # as the plan submitted them: what JEDI raised lies above (never lowered by a sizer)
        self.plan_ram = list(self.task_ram)
        self.plan_cpu = list(self.task_cpu)
        self.task_wall = None if plan.walltime is None else plan.walltime.astype(float).tolist()
        self.maxtime = queue_maxtime(cfg, work)
        self.short = cfg.short_maxtime_s
        self.retune_at = frozenset(cfg.retune_done_jobs)
        self.request = np.nan_to_num(work.request_ram, nan=cfg.default_ram_mb_per_core).tolist()
        self.unit_task = work.task.tolist()
        self.cores = work.cores.tolist()
        self.wall = work.wall_s.tolist()
        self.need = work.need_mb.tolist()
        self.nevents = work.nevents.tolist()
        self.power = work.core_power.tolist()
        self.base_ram = work.base_ram_mb.tolist()
        self.base_wall = work.base_walltime_s.tolist()
        self.eff = work.cpu_efficiency.tolist()
        scouted = np.broadcast_to(np.asarray(plan.use_scouts, dtype=bool), (n_t,))
        scout = work.is_scout & scouted[work.task]
        self.is_scout = scout.tolist()
        self.priority = self._priorities(scout).tolist()
        self.n_scouts = np.where(scouted, work.n_scouts, 0).astype(np.int64).tolist()
        lowers = np.asarray(plan.retune_lowers_cputime, dtype=bool)
        self.lowers = np.broadcast_to(lowers, (n_t,)).tolist()
        self._unit_state(n_j)
        # unit -> (start, outcome, allocation MB, walltime limit s, slot MB/core, long queue)
        self.running: dict[int, tuple[float, int, float, float, float, bool]] = {}
        self._need_slots()
        self.log: list[tuple[int, int, float, float, float, int, float, float]] | None = (
            [] if plan.record else None
        )
        # when each unit's latest attempt was queued (8 bytes a unit: 2.6M jobs, 21 MB)
        self.queued_at = array("d", bytes(8 * n_j))
        self.queued_limit: dict[int, tuple[float, int]] = {}  # unit -> (limit, task version)
        self._task_state(n_t)
        self.submit = work.submit_s.tolist()
        # the clock
        self.events: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.now = 0.0
        self.watch_scouting: set[int] = set()
        self.watch_retune: set[int] = set()
        self.tick_at: float | None = None
        self.n_events = 0

    def _unit_state(self, n_j: int) -> None:
        """Per unit: the plan's own allocations where it sets them, attempts and kills."""
        self.job_ram: list[float | None] = _per_unit(self.plan.unit_ram, n_j)
        self.job_wall_limit: list[float | None] = _per_unit(self.plan.unit_walltime, n_j)
        self.attempts = [0] * n_j
        self.unit_mem_kills = [0] * n_j
        self.first_ok = [False] * n_j
        self.failed = [False] * n_j

    def _need_slots(self) -> None:
        """Per unit, the slot its own need requires: a share no allocation is blamed for,
        and whether the job takes HIMEM-class memory (in a HIMEM slot, or above the
        standard share within the pilot's grace)."""
        work = self.w
        base = work.base_ram_mb[work.task]
        slot_mb = rules.need_slot_mb(work.need_mb, base, work.cores, self.pool.types)
        self.standard_mb = min(t.mb_per_core for t in self.cfg.resource_types.values())
        self.need_share = (base + work.cores * slot_mb).tolist()
        self.need_himem = (slot_mb > self.standard_mb).tolist()

    def _priorities(self, scout: np.ndarray) -> np.ndarray:
        """Each unit's currentPriority under this plan: JobGenerator's scout boost for the
        units it scouts with, else the job's own (its task's where the history has none)."""
        task_priority = self.w.task_priority_or_default(self.cfg.default_task_priority)
        own = self.w.unit_priority
        base = task_priority[self.w.task] if own is None else own
        if not self.cfg.scout_priority:
            return base
        return np.where(scout, job_priority(task_priority[self.w.task], True), base)

    def _task_state(self, n_t: int) -> None:
        """Per-task counters and outcomes."""
        self.state = [SCOUTING if s else RUNNING for s in self.n_scouts]
        self.resolved = [0] * n_t
        self.done_units: list[list[int]] = [[] for _ in range(n_t)]
        self.scouts_ok = [0] * n_t
        self.scouts_failed = [0] * n_t
        self.scouts_resolved = [0] * n_t
        self.task_version = [0] * n_t  # +1 at each change of cpuTime (the limits)
        # the input files' ramCounts of each task, as JEDI's memory retry raises them
        self.files = FileLedger(self.unit_task, self.w.files_per_unit().tolist(), n_t)
        self.retry_ram = RetryRam.from_split_rule(self.cfg.retry_ram_split_rule)
        self.first_prod = [math.nan] * n_t
        self.completion = [math.nan] * n_t
        self._tally_state(n_t)


def queue_maxtime(cfg: ReplaySettings, work: Workload) -> float:
    """The long queue's maxtime (s): the configured one, raised to the history's longest
    job (a job that finished in the history fitted its queue); where JEDI retries a job
    killed at its walltime limit (``increase_cputime``)."""
    return max(cfg.queue_maxtime_s or 0.0, math.ceil(float(work.wall_s.max())))
