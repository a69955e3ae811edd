"""The history replay's ``online`` strategy: every PanDA job sized by the online sizer
(``scoutless.sizing.online``), memory and walltime, each task its own type.

- **The prior** is the submission's answer: per task, the bundle's calibrated value
  distribution of ramCount and cpuTime times the spread of a task's jobs around its value
  (the bundle's ``job_spreads``): the need of one of its jobs, the distribution the
  hybrid's cost-aware value was chosen on, held as `PRIOR_POINTS` equally likely jobs
  (``replay/submission.py``'s ``job_need_priors``). It weighs as much as that many outcomes: JEDI's ten scouts.
- **Learning** on the replay's clock, as each attempt ends: a success its maxPSS per core
  and its run; a memory kill a lower bound at the kill factor × its allocation; a walltime
  kill a lower bound on its run at the limit it hit (censored rows: Kaplan–Meier). A run
  is learnt once every job that started before it has ended (`PandaOnline._learn_runs`):
  the first jobs to end are the short ones.
- **Sizing**: a job's first attempt, when it starts, from the task's posterior (ramCount
  and walltime limit); a memory kill's retry from the distribution conditional on the need
  exceeding what killed it. A walltime kill is priced with the retry JEDI makes, at the
  queue's maxtime (``Release.retry_at``, `_retry_cpu`), not with retries of the sizer's
  own close above the need. JEDI acts beside it as the docs recommend (the re-tuning, the
  memory ladder, a walltime kill's retry at the queue's maxtime), and what JEDI raised is
  never lowered (``replay/engine.py``'s ``size_first``).

Walltime is sized in cpuTime's unit (HS06·s per event): a job's run less baseWalltime
times its cores, corePower and efficiency over its events, the unit a task's jobs share
(``getJobMaxWalltime`` turns it back into the job's limit). A task is a type of its own:
PanDA's tasks are many and short-lived, and the sizer's pooled shape of other types would
be rebuilt across thousands of them; the prior gives a task its shape instead.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from scoutless.config import Settings
from scoutless.replay.state import queue_maxtime
from scoutless.replay.submission import PRIOR_TARGETS
from scoutless.replay.trace_decision import kill_cap
from scoutless.replay.traces import MB, kill_price
from scoutless.replay.workload import Workload
from scoutless.sizing.features import Release
from scoutless.sizing.online import OnlineSizer
from scoutless.sizing.protocol import Outcome
from scoutless.sizing.resources import walltime


class PandaOnline:
    """The history replay's online :class:`~scoutless.replay.plan.UnitSizer` (see the
    module's docstring): per task an online sizer of ramCount (MB/core) and one of
    cpuTime (HS06·s/event), started from the task's prior. ``tasks`` (per task): the
    tasks it sizes, a canary's arm; the others get NaN (the plan's, JEDI's ladder) and
    teach it nothing. None: every task."""

    def __init__(
        self,
        work: Workload,
        settings: Settings,
        priors: Mapping[str, np.ndarray],
        tasks: np.ndarray | None = None,
        name: str = "strategy 'online'",
    ):
        missing = [t for t in PRIOR_TARGETS if t not in priors]
        if missing:  # ``name``: what the user asked for (the strategy, a canary's arm)
            raise ValueError(f"{name} needs the submission's prior of {missing[0]!r}"
                             " (a bundle with value models and the cost or value policy)")  # fmt: skip
        # a task's rows weigh alike (its jobs share a run length); one model: no input size
        self.sizing = settings.sizing.model_copy(
            update={"runtime_weighted": False, "shadow_choice": False}
        )
        self.settings = settings
        self.priors = {t: np.asarray(priors[t], dtype=float) for t in PRIOR_TARGETS}
        self.grace = settings.allocation.guaranteed_memory_grace
        self.factor = settings.replay.memory_kill_factor
        self.unit_task = work.task
        self.sizes = (np.ones(work.n_tasks, dtype=bool) if tasks is None
                      else np.asarray(tasks, dtype=bool)).tolist()  # fmt: skip
        self.cores = work.cores.astype(float).tolist()
        self.base_ram = work.base_ram_mb[work.task].tolist()
        self.base_wall = work.base_walltime_s[work.task].tolist()
        eff = np.where(work.cpu_efficiency > 0, work.cpu_efficiency / 100.0, 1.0)[work.task]
        # seconds of run above baseWalltime per HS06·s/event (NaN: no events, no limit)
        per_cpu = work.nevents / np.maximum(work.cores, 1.0) / work.core_power / eff
        per_cpu = np.where(per_cpu > 0, per_cpu, np.nan)
        self.run_per_cpu = per_cpu.tolist()
        self.retry_cpu = _retry_cpu(work, settings, per_cpu)
        self.memory: dict[int, OnlineSizer] = {}
        self.cpu: dict[int, OnlineSizer] = {}
        #: per task: outcomes learnt, and the answers of `_answers` at a version
        self.learnt: dict[int, int] = {}
        self.memo: dict[int, tuple[tuple[int, float], float, float]] = {}
        #: per task, its first attempts in the order they started, their runs not yet
        #: learnt; per unit, what its first attempt's run teaches (None: nothing)
        self.started: dict[int, deque[int]] = {}
        self.ended: dict[int, Outcome | None] = {}
        self.sized_runs: set[int] = set()
        self.counts = {"sized": 0, "retries": 0, "learnt": 0, "memory_bounds": 0,
                       "walltime_bounds": 0, "tasks": 0}  # fmt: skip

    # ------------------------------------------------------------------ per task
    def _sizers(self, task: int) -> tuple[OnlineSizer, OnlineSizer]:
        """The task's two sizers, started from its prior when first asked."""
        if task not in self.memory:
            self.counts["tasks"] += 1
            self.memory[task] = self._started(self.priors["memory"][task], kill_price(
                self.settings, MB), kill_cap("memory", self.settings))  # fmt: skip
            cap = self.settings.allocation.kill_cap("cputime")
            self.cpu[task] = self._started(self.priors["cputime"][task],
                                           walltime(self.settings).failure_price(), cap)  # fmt: skip
        return self.memory[task], self.cpu[task]

    def _started(self, prior: np.ndarray, price: Any, cap: float) -> OnlineSizer:
        sizer = OnlineSizer(self.sizing, failure_price=price, max_kill_probability=cap)
        n = len(prior)
        # the prior's rows at no particular cores: the cores line fits the jobs' own
        sizer.start_type(0, [Release(cores=math.nan)] * n, prior, np.ones(n), pseudo=True)
        return sizer

    def _release(self, unit: int) -> Release:
        return Release(cores=self.cores[unit])

    # ------------------------------------------------------------------ units
    def _per_core(self, unit: int, job_mb: float) -> float:
        """A job's memory (MB) as a ramCount (MB per core above baseRamCount)."""
        return max((job_mb - self.base_ram[unit]) / max(self.cores[unit], 1.0), 1.0)

    def _answers(self, task: int, unit: int) -> tuple[float, float]:
        """The task's first-attempt ramCount and cpuTime as its posterior stands: one
        answer for its jobs until it learns an outcome (its jobs share their features;
        the history starts a task's jobs in bursts between outcomes)."""
        version = self.learnt.get(task, 0)
        memo = self.memo.get(task)
        if memo is not None and memo[0] == (version, self.cores[unit]):
            return memo[1], memo[2]
        memory, cpu = self._sizers(task)
        features = self._release(unit)
        # a walltime kill is retried by JEDI at the queue's maxtime: priced with that retry
        timed = dataclasses.replace(features, retry_at=self.retry_cpu[task])
        ram, cputime = memory.first(0, features) / self.grace, cpu.first(0, timed)
        self.memo[task] = ((version, self.cores[unit]), ram, cputime)
        self.counts["sized"] += 1
        return ram, cputime

    def first(self, task: int, unit: int) -> float:
        if not self.sizes[task]:
            return math.nan
        return self._answers(task, unit)[0]

    def walltime(self, task: int, unit: int) -> float:
        scale = self.run_per_cpu[unit]
        if scale != scale or not self.sizes[task]:
            return math.nan
        self.started.setdefault(task, deque()).append(unit)  # its run is learnt in this order
        self.sized_runs.add(unit)
        return self._answers(task, unit)[1] * scale + self.base_wall[unit]

    def retry(self, task: int, unit: int, failed: float) -> float:
        if not self.sizes[task]:
            return math.nan
        memory, _ = self._sizers(task)
        self.counts["retries"] += 1
        features = self._release(unit)
        memory.first(0, features)  # the posterior as it is now, not as the first attempt saw it
        return memory.retry(0, features, self._per_core(unit, failed)) / self.grace

    def learn(self, task: int, unit: int, outcome: Outcome) -> None:
        if not self.sizes[task]:
            return
        memory, cpu = self._sizers(task)
        features = self._release(unit)
        self.counts["learnt"] += 1
        self.learnt[task] = self.learnt.get(task, 0) + 1
        if outcome.need == outcome.need:  # a success, or a memory kill's bound
            need = self._per_core(unit, outcome.need)
            memory.learn(0, features, Outcome(need, outcome.runtime, outcome.censored))
            self.counts["memory_bounds"] += int(outcome.censored)
        if unit in self.ended or unit not in self.sized_runs:
            return  # a retry's run, or a job whose limit the sizer never set
        run = max(outcome.runtime - self.base_wall[unit], 1.0)
        killed = outcome.need != outcome.need
        # a memory kill's run says little of the job's length: nothing to learn of it
        timed = None if outcome.censored and not killed else Outcome(
            run / self.run_per_cpu[unit], self.cores[unit], killed)  # fmt: skip
        self.ended[unit] = timed
        self._learn_runs(task, cpu)

    def _learn_runs(self, task: int, cpu: OnlineSizer) -> None:
        """The first attempts' runs in the order they started, each once every attempt
        started before it has ended: the first to end are the short ones, and a posterior
        learnt in their order would be biased low (the hybrid's reason not to lower
        cpuTime at its re-tuning); in start order the runs learnt are a fair sample."""
        queue = self.started[task]
        while queue and queue[0] in self.ended:
            unit = queue.popleft()
            timed = self.ended[unit]
            if timed is not None:
                cpu.learn(0, self._release(unit), timed)
                self.counts["walltime_bounds"] += int(timed.censored)

    def summary(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.counts.items()}


def _retry_cpu(work: Workload, settings: Settings, per_cpu: np.ndarray) -> list[float]:
    """Per task, the queue's maxtime in the walltime sizer's unit (HS06·s per event): the
    limit JEDI gives a job killed at its walltime, less baseWalltime, over the task's
    median seconds per HS06·s/event (NaN: a task with no events)."""
    maxtime = queue_maxtime(settings.replay, work)
    scale = pd.Series(per_cpu).groupby(work.task).median().reindex(range(work.n_tasks))
    run = maxtime - np.asarray(work.base_walltime_s, dtype=float)
    return np.where(run > 0, run / scale.to_numpy(), np.nan).tolist()
