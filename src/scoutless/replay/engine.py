# Left whole: one concept, the event loop of one strategy (its events, their order, the pool).
"""The discrete-event replay of one strategy: tasks' jobs through a pool of job slots.

Why a heap of events rather than SimPy: the replay must push ~2.6M jobs × 3 strategies
through in minutes. Every process here is a job that waits for cores, runs for a known
time and ends (no interaction while running), so one event per job end plus PanDA's
priority queues (:mod:`scoutless.replay.pool`) is the whole model; SimPy's generator
process and Event objects per job cost several times more per job for no modelling gain.
JEDI's periodic work (the avalanche check, the re-tuning) runs on one clock tick every
``check_interval_s``, as JEDI's own assessment does, and re-estimates all due tasks with
one call of the target code.

Events are ``(time, sequence, kind, payload)`` on a heap; ties resolve in insertion order,
so a replay is deterministic.
"""

from __future__ import annotations

import heapq
import math

from scoutless.replay import rules
from scoutless.replay.ladder import job_min_ram_count, memory_retry
from scoutless.replay.result import BROKEN, EXHAUSTED, RUNNING, SCOUTING, ReplayResult
from scoutless.replay.state import ReplayState
from scoutless.sizing.protocol import Outcome

SUBMIT, END, TICK = 0, 1, 2


class Replay(ReplayState):
    """One strategy's replay on its state (:class:`ReplayState`, set up before the first
    event); :meth:`run` returns its :class:`ReplayResult`."""

    # ------------------------------------------------------------------ clock

    def push(self, time: float, kind: int, payload: int) -> None:
        self.seq += 1
        heapq.heappush(self.events, (time, self.seq, kind, payload))

    def schedule_tick(self) -> None:
        if self.tick_at is None:
            period = self.cfg.check_interval_s
            self.tick_at = (math.floor(self.now / period) + 1) * period
            self.push(self.tick_at, TICK, 0)

    def run(self) -> ReplayResult:
        for t, at in enumerate(self.submit):
            self.push(at, SUBMIT, t)
        events, pop = self.events, heapq.heappop
        while events:
            self.now, _, kind, payload = pop(events)
            self.n_events += 1
            if kind == END:
                self.on_end(payload)
            elif kind == SUBMIT:
                self.on_submit(payload)
            else:
                self.on_tick()
        return self.result()

    # ------------------------------------------------------------------ jobs

    def release(self, units: range | list[int]) -> None:
        """Queue units (first attempts or retries) in the pool of their resource type, on
        the long queue where their walltime limit needs it."""
        for j in units:
            self.queued_at[j] = self.now
            t = self.unit_task[j]
            sizer = self.plan.sizer
            if sizer is not None and not self.plan.sizes_at_start and self.attempts[j] == 0 \
                    and self.job_ram[j] is None:  # fmt: skip
                sized = sizer.first(t, j)
                self.job_ram[j] = sized if sized == sized else None  # NaN: the task's
            ram = self.ram_of(j, t)
            long = False
            if self.short is not None:
                limit = self.limit_of(j)
                self.queued_limit[j] = (limit, self.task_version[t])
                long = rules.needs_long_queue(
                    limit, self.short, self.is_scout[j], self.power[j], self.eff[t],
                    self.base_wall[t],
                )  # fmt: skip
            matched = rules.matched_ram_per_core(ram, self.cores[j], self.base_ram[t])
            for started in self.pool.enqueue(j, self.cores[j], matched, self.priority[j], long):
                self.start(*started)

    def limit_of(self, j: int) -> float:
        """The walltime limit the job would get now (``getJobMaxWalltime``); inf where the
        task has no cpuTime: the job gets the maxtime of the queue it runs on."""
        t = self.unit_task[j]
        limit = self.job_wall_limit[j]
        if limit is None and self.task_wall is not None:
            limit = min(self.task_wall[t], self.maxtime)
        if limit is None or limit != limit:  # None or NaN
            limit = rules.job_max_walltime(
                self.task_cpu[t], self.nevents[j], self.cores[j], self.power[j],
                self.eff[t], self.base_wall[t], math.inf,
            )  # fmt: skip
        return limit

    def start(self, j: int, slot_mb_per_core: float, on_long: bool = False) -> None:
        t = self.unit_task[j]
        if self.plan.sizes_at_start and self.attempts[j] == 0:
            self.size_first(j, t)
        ram = self.ram_of(j, t)
        alloc = rules.allocation_mb(ram, slot_mb_per_core, self.cores[j], self.base_ram[t])
        wall = self.wall[j]
        # never above the maxtime of the queue it runs on (JobSplitter caps at siteSpec.maxtime)
        queue_maxtime = self.maxtime if on_long or self.short is None else self.short
        limit, version = self.queued_limit.pop(j, (None, -1))
        if limit is None or version != self.task_version[t]:  # re-tuned since it queued
            limit = self.limit_of(j)
        limit = min(limit, queue_maxtime)
        runtime, outcome = wall, rules.SUCCESS
        killed_at = rules.memory_kill_time(wall, self.need[j], alloc, self.cfg.memory_kill_factor)
        if killed_at is not None:
            runtime, outcome = killed_at, rules.MEMORY_KILL
        if limit < runtime:
            runtime, outcome = limit, rules.WALLTIME_KILL
        if not self.is_scout[j] and self.first_prod[t] != self.first_prod[t]:  # still NaN
            self.first_prod[t] = self.now - self.submit[t]
        self.attempts[j] += 1
        self.running[j] = (self.now, outcome, alloc, limit, slot_mb_per_core, on_long)
        self.push(self.now + runtime, END, j)

    def size_first(self, j: int, t: int) -> None:
        """The sizer's first attempt of a unit about to start: its ramCount and walltime
        limit from what the sizer knows now, never below what JEDI raised (a task's
        ramCount or cpuTime above the plan's, by the re-tuning or the memory retry's
        task raise): scoutless never lowers what JEDI raised."""
        sizer = self.plan.sizer
        ram = sizer.first(t, j)
        if ram == ram:  # not NaN
            jedi = self.task_ram[t]
            self.job_ram[j] = max(ram, jedi) if jedi > self.plan_ram[t] else ram
        wall = sizer.walltime(t, j)
        if wall == wall:
            if self.task_cpu[t] > self.plan_cpu[t]:  # JEDI raised it (NaN: never)
                wall = max(wall, self.limit_of(j))
            self.job_wall_limit[j] = wall
            self.queued_limit.pop(j, None)  # the limit is this one, not the release's

    def on_end(self, j: int) -> None:
        started, outcome, alloc, limit, slot_mb, on_long = self.running.pop(j)
        t = self.unit_task[j]
        runtime = self.now - started
        if self.log is not None:
            self.log.append(
                (j, self.attempts[j], self.queued_at[j], started, self.now, outcome, alloc, limit)
            )
        core_s = self.cores[j] * runtime
        self.used[t] += core_s
        self.account_slack(j, t, runtime, alloc, limit if outcome == rules.SUCCESS else None)
        self.account_priced(j, t, runtime, alloc, slot_mb, on_long, outcome != rules.SUCCESS)
        self.account_wait(t, started - self.queued_at[j], on_long or slot_mb > self.standard_mb)
        if outcome != rules.SUCCESS:
            self.failed_mb_s[t] += alloc * runtime
        if outcome == rules.WALLTIME_KILL and not on_long and self.short is not None \
                and limit >= self.short:  # fmt: skip
            self.short_kill_core_s[t] += core_s  # its queue was chosen when it was released
        if self.plan.sizer is not None:
            self.plan.sizer.learn(t, j, self.outcome_of(j, outcome, runtime, alloc))
        for nxt in self.pool.release(j, self.cores[j]):
            self.start(*nxt)
        if outcome == rules.SUCCESS:
            self.on_success(j, t)
        else:
            self.on_kill(j, t, outcome, core_s, alloc)

    def outcome_of(self, j: int, outcome: int, runtime: float, alloc: float) -> Outcome:
        """What the sizer learns of an attempt (``UnitSizer``): a kill is a lower bound,
        on the memory (kill factor × its allocation) or on the run (the limit it hit)."""
        if outcome == rules.WALLTIME_KILL:
            return Outcome(math.nan, runtime, True)
        if outcome == rules.MEMORY_KILL:
            return Outcome(self.cfg.memory_kill_factor * alloc, runtime, True)
        return Outcome(self.need[j], runtime, False)

    def on_success(self, j: int, t: int) -> None:
        if self.attempts[j] == 1:
            self.first_ok[j] = True
        self.done_units[t].append(j)
        if self.is_scout[j]:
            self.scouts_ok[t] += 1
            self.scouts_resolved[t] += 1
        # propagateResultToJEDI: the task is recalculated when its finished jobs (scouts
        # included) reach 5 and 100; while scouting, the avalanche does it from the scouts
        if (
            self.plan.retune
            and self.state[t] == RUNNING
            and len(self.done_units[t]) in self.retune_at
        ):
            self.watch_retune.add(t)
            self.schedule_tick()
        self.resolve(t)

    def on_kill(self, j: int, t: int, outcome: int, core_s: float, alloc: float) -> None:
        self.waste[t] += core_s
        if self.is_scout[j]:
            self.scouts_failed[t] += 1
        if outcome == rules.MEMORY_KILL:
            self.mem_kills[t] += 1
            self.unit_mem_kills[j] += 1
            self.increase_memory(j, t, self.cfg.memory_kill_factor * alloc)
        else:
            self.wall_kills[t] += 1
            self.job_wall_limit[j] = self.maxtime  # increase_cputime
            if self.plan.retune and self.done_units[t]:
                self.watch_retune.add(t)  # requestTaskParameterRecalculation
                self.schedule_tick()
        if self.attempts[j] >= self.cfg.max_attempts:
            self.failed[j] = True
            if self.is_scout[j]:
                self.scouts_resolved[t] += 1
            self.resolve(t)
        else:
            self.release([j])

    def ram_of(self, j: int, t: int) -> float:
        """The unit's ramCount: its own (the task's where it has none), at least its input
        files' (``InputChunk.getMaxRamCount``)."""
        ram = self.job_ram[j]
        if ram is None:
            ram = self.task_ram[t]
        file_ram = self.files.unit_ram[j]
        return ram if ram >= file_ram else file_ram

    def increase_memory(self, j: int, t: int, failed_mb: float) -> None:
        current = self.ram_of(j, t)
        if self.plan.sizer is not None:  # its conditional retry; past its knowledge, the ladder
            sized = self.plan.sizer.retry(t, j, failed_mb)
            if sized == sized and sized > current:
                self.job_ram[j] = sized
                if not self.plan.ladder_beside_sizer:
                    return
        cfg = self.cfg
        cores, base = self.cores[j], self.base_ram[t]
        raised = memory_retry(
            self.files, j, t, job_min_ram_count(current, 0.0, cores, base), cores, base,
            self.task_ram[t], cfg.memory_retry_action, self.retry_ram,
            cfg.ram_ladder_mb_per_core, cfg.task_raise_share,
        )  # fmt: skip
        if raised.task_ram is not None:
            self.task_ram[t] = max(self.task_ram[t], raised.task_ram)

    def resolve(self, t: int) -> None:
        self.resolved[t] += 1
        if self.resolved[t] == self.w.n_units[t] and self.state[t] in (SCOUTING, RUNNING):
            self.completion[t] = self.now - self.submit[t]
            self.watch_retune.discard(t)

    # ------------------------------------------------------------------ tasks

    def units_of(self, t: int, scouts: bool | None = None) -> range:
        first, n, n_scouts = self.w.first_unit[t], self.w.n_units[t], self.n_scouts[t]
        if scouts is None:
            return range(first, first + n)
        return range(first, first + n_scouts) if scouts else range(first + n_scouts, first + n)

    def on_submit(self, t: int) -> None:
        if self.state[t] == EXHAUSTED:  # resumed by an operator
            self.state[t] = RUNNING
            self.release(self.units_of(t, scouts=False))
        elif self.state[t] == SCOUTING:
            self.release(self.units_of(t, scouts=True))
            self.watch_scouting.add(t)
            self.schedule_tick()
        else:
            self.release(self.units_of(t))

    def on_tick(self) -> None:
        self.tick_at = None
        due = [
            t for t in self.watch_scouting
            if rules.avalanche_due(
                self.scouts_ok[t], self.n_scouts[t], self.scouts_resolved[t],
                self.cfg.avalanche_min_finished_share,
            )
        ]  # fmt: skip
        retune = sorted(self.watch_retune)
        self.watch_retune.clear()
        tasks = sorted(due) + retune
        units = [j for t in tasks for j in self.done_units[t]]
        ram, cpu = self.estimate(units) if units else ({}, {})
        for t in sorted(due):
            self.watch_scouting.discard(t)
            self.avalanche(t, ram.get(t, math.nan), cpu.get(t, math.nan))
        for t in retune:
            cputime = cpu.get(t, math.nan)
            if not self.lowers[t] and cputime < self.task_cpu[t]:
                cputime = math.nan  # keep the higher value
            self.apply(t, ram.get(t, math.nan), cputime)
        if self.watch_scouting or self.watch_retune:
            if not self.events:  # nothing left that could make them due
                raise RuntimeError(f"replay stalled: tasks {sorted(self.watch_scouting)} wait")
            self.schedule_tick()

    def apply(self, t: int, ram: float, cpu: float) -> None:
        if ram == ram:  # not NaN
            self.task_ram[t] = ram
        if cpu == cpu:
            self.task_cpu[t] = cpu
            self.task_version[t] += 1

    def avalanche(self, t: int, ram: float, cpu: float) -> None:
        """JEDI's scout exits: broken, exhausted, or the production jobs go out."""
        self.scout_ram[t] = ram
        self.priced["scout_wait_s"][t] = self.now - self.submit[t]
        n_new = self.w.n_units[t] - self.n_scouts[t]
        if rules.scouts_broken(
            self.scouts_ok[t], self.scouts_failed[t], self.cfg.scout_min_success_rate
        ):
            self.stop(t, BROKEN, n_new)
            return
        self.apply(t, ram, cpu)
        if ram == ram and rules.scouts_exhausted(
            self.request[t], ram, self.cfg.exhausted_ram_mb_per_core,
            n_new, self.cfg.exhausted_min_new_jobs,
        ):  # fmt: skip
            if self.cfg.exhausted_resume_after_s is None:
                self.stop(t, EXHAUSTED, n_new)
                return
            self.state[t] = EXHAUSTED  # an operator resumes it later
            self.push(self.now + self.cfg.exhausted_resume_after_s, SUBMIT, t)
            return
        self.state[t] = RUNNING
        self.release(self.units_of(t, scouts=False))

    def stop(self, t: int, status: int, n_new: int) -> None:
        """The task ends here: its production jobs never run."""
        self.state[t] = status
        for j in self.units_of(t, scouts=False):
            self.failed[j] = True
        self.resolved[t] += n_new
        self.completion[t] = math.nan
