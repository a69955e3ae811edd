"""Real ATLAS jobs sized one by one (the core of ``atlas_jobs.py``): a task's job records
in ``pandaid`` order, each job's memory allocated by one *side* and killed where its
maxPSS exceeds ``factor`` × the allocation, a killed job retried until it fits or has
had ``max_attempts`` attempts.

Sides:

* ``recorded``: each job's first attempt at its ``minramcount`` as JEDI set it; a kill
  climbs JEDI's ladder (:mod:`scoutless.replay.ladder`), the task's ramCount for that job
  taken as its own record (raised by the 30 % rule where the walk's kills trigger it).
* ``ladder``: the task's ramCount is its first recorded ``minramcount`` (decompensated,
  per core) for every job, raised only by JEDI's ladder and the 30 % rule.
* ``engine``: scoutless's online sizer, per core, with no prior: a job it knows nothing of
  gets the first recorded ``minramcount``; a kill is retried from the conditional
  distribution (JEDI's ladder while it has learnt nothing: it writes nothing then, and
  JEDI's retry acts, as in production); each job's outcomes (a kill's
  lower bound ``factor`` × allocation, then the need) become known to it only once the
  next ``lag`` jobs were released (the records hold no start or end times).

Each job reads one input file (the records do not say how many): the 30 % rule counts jobs.
Allocations are a job's ``minramcount`` (MB, compensated as JEDI records it).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from scoutless.config import SizingSettings, get_settings
from scoutless.replay.ladder import FileLedger, job_min_ram_count, memory_retry, per_core
from scoutless.replay.rules import memory_kill_time
from scoutless.sizing.features import Release as Features
from scoutless.sizing.online import OnlineSizer
from scoutless.sizing.protocol import Outcome as SizerOutcome

MB = 2.0**20
#: MB·s → GB·h
GBH = 1.0 / 1024.0 / 3600.0
SIDES = ("recorded", "ladder", "engine")


@dataclass(frozen=True)
class TaskJobs:
    """One task's usable jobs in ``pandaid`` order (MB, s) and what was dropped."""

    task: str
    pandaid: np.ndarray
    need_mb: np.ndarray  # maxPSS (kB in the records)
    wall_s: np.ndarray
    cores: np.ndarray
    input_bytes: np.ndarray
    recorded_mb: np.ndarray  # minramcount, MB a job
    dropped: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.pandaid)


def read_task(path: Path) -> TaskJobs:
    """A ``job_records_*.csv``: rows with ``minramcount`` 0, no maxPSS or wall time, or (where
    the file has ``jobstatus``) not finished are dropped and counted."""
    rows = pd.read_csv(path)
    num = {c: pd.to_numeric(rows[c], errors="coerce") for c in (
        "pandaid", "minramcount", "maxpss", "wall_time", "actualcorecount", "inputfilebytes")}  # fmt: skip
    dropped = {"minramcount_0": int((num["minramcount"].fillna(0) <= 0).sum())}
    keep = num["minramcount"].fillna(0) > 0
    if "jobstatus" in rows.columns:
        bad = keep & (rows["jobstatus"] != "finished")
        dropped["not_finished"] = int(bad.sum())
        keep &= ~bad
    bad = keep & ~((num["maxpss"] > 0) & (num["wall_time"] > 0))
    dropped["no_maxpss_or_wall"] = int(bad.sum())
    keep &= ~bad
    order = np.argsort(num["pandaid"][keep].to_numpy(), kind="stable")

    def col(name: str, default: float = math.nan) -> np.ndarray:
        return num[name][keep].fillna(default).to_numpy(dtype=float)[order]

    return TaskJobs(
        task=path.stem.split("_")[-1], pandaid=col("pandaid").astype(np.int64),
        need_mb=col("maxpss") / 1024.0, wall_s=col("wall_time"),
        cores=np.maximum(col("actualcorecount", 1.0), 1.0), input_bytes=col("inputfilebytes"),
        recorded_mb=col("minramcount"), dropped=dropped,
    )  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    """What one attempt taught: the need (MB per core), or a lower bound on it when
    ``censored``; ``runtime`` seconds it ran. The online sizer's outcome, as its verb
    ``learn`` takes it."""

    need: float
    runtime: float
    censored: bool


class OnlineSide:
    """The one adapter to the online sizer (``first``/``retry``/``learn`` per key, its
    unit bytes per core); nothing else in the benchmark names the sizer's API."""

    def __init__(self, sizing: SizingSettings | None = None) -> None:
        """``sizing``: the sizer's settings (default: the environment's)."""
        self.sizer = OnlineSizer(sizing or get_settings().sizing)
        self.learnt: dict[str, int] = {}

    def knows(self, key: str) -> bool:
        """Whether any outcome of ``key`` was learnt (else the sizer has nothing to say
        and, as in production, JEDI's own retry acts)."""
        return self.learnt.get(key, 0) > 0

    def first(self, key: str, f: Features) -> float:
        return self.sizer.first(key, f) / MB

    def retry(self, key: str, f: Features, failed: float) -> float:
        return self.sizer.retry(key, f, failed * MB) / MB

    def learn(self, key: str, f: Features, outcome: Outcome) -> None:
        self.learnt[key] = self.learnt.get(key, 0) + 1
        need = outcome.need * MB
        self.sizer.learn(key, f, SizerOutcome(need, outcome.runtime, outcome.censored))


@dataclass
class Tally:
    """A side's walk of one task: GB·h (slack of the attempts that fitted, allocation ×
    time of the killed ones), kills, and how the jobs ended."""

    jobs: int = 0
    attempts: int = 0
    kills: int = 0
    jobs_killed_twice: int = 0
    jobs_failed: int = 0
    slack_gbh: float = 0.0  # Σ (allocation − need)⁺ × wall over the attempts that fitted
    overuse_gbh: float = 0.0  # Σ (need − allocation)⁺ × wall (fitted within the factor)
    failed_gbh: float = 0.0
    need_gbh: float = 0.0
    #: the waste of the jobs released once the first outcome was known (the engine's
    #: first ``lag`` + 1 jobs are sized from the request alone)
    wasted_after_lag_gbh: float = 0.0

    def summary(self) -> dict[str, float | int]:
        wasted = self.slack_gbh + self.failed_gbh
        return {
            "jobs": self.jobs, "attempts": self.attempts, "kills": self.kills,
            "jobs_killed_twice": self.jobs_killed_twice, "jobs_failed": self.jobs_failed,
            "wasted_gbh": wasted, "slack_gbh": self.slack_gbh, "failed_gbh": self.failed_gbh,
            "overuse_gbh": self.overuse_gbh, "need_gbh": self.need_gbh,
            "wasted_after_lag_gbh": self.wasted_after_lag_gbh,
            "slack_relative": self.slack_gbh / self.need_gbh if self.need_gbh else math.nan,
        }  # fmt: skip


class Walk:
    """One side's walk of one task (see the module's docstring)."""

    def __init__(self, jobs: TaskJobs, side: str, factor: float, lag: int,
                 max_attempts: int, online: OnlineSide | None) -> None:  # fmt: skip
        if side not in SIDES:
            raise ValueError(f"unknown side {side!r}; expected one of {', '.join(SIDES)}")
        self.jobs, self.side, self.factor, self.lag = jobs, side, factor, lag
        self.max_attempts = max_attempts
        self.online = online if online is not None or side != "engine" else OnlineSide()
        n = len(jobs)
        self.files = FileLedger([0] * n, [1] * n, 1)
        #: the task's ramCount (MB/core): the first record, raised by the 30 % rule
        self.task_ram = per_core(jobs.recorded_mb[0], jobs.cores[0], 0.0) if n else 0.0
        if side == "recorded":  # each job's own record is its task's ramCount
            self.task_ram = 0.0
        self.seen_ram = self.task_ram  # what a job released now is generated with
        self.raises: deque[tuple[int, float]] = deque()  # (job, task ramCount) not yet seen
        self.pending: deque[tuple[int, Features, list[Outcome]]] = deque()
        self.tally = Tally()

    def run(self) -> Tally:
        for k in range(len(self.jobs)):
            self._catch_up(k)
            self._job(k)
        return self.tally

    def _catch_up(self, k: int) -> None:
        """What jobs released at least ``lag`` jobs before ``k`` revealed, now known."""
        while self.raises and self.raises[0][0] + self.lag < k:
            self.seen_ram = max(self.seen_ram, self.raises.popleft()[1])
        while self.pending and self.pending[0][0] + self.lag < k:
            _, f, outcomes = self.pending.popleft()
            for outcome in outcomes:
                self.online.learn(self.jobs.task, f, outcome)  # type: ignore[union-attr]

    def _features(self, k: int) -> Features:
        j = self.jobs
        request = j.recorded_mb[0] / j.cores[0] * MB
        return Features(input_size=float(j.input_bytes[k]), cores=float(j.cores[k]),
                        request=float(request))  # fmt: skip

    def _first(self, k: int, f: Features) -> float:
        """The first attempt's allocation (MB a job)."""
        j = self.jobs
        if self.side == "recorded":
            return float(j.recorded_mb[k])
        if self.side == "ladder":
            return float(job_min_ram_count(self.seen_ram, 0.0, j.cores[k], 0.0))
        a = self.online.first(j.task, f)  # type: ignore[union-attr]
        if not (math.isfinite(a) and a > 0):  # nothing known yet: the request
            a = f.request / MB
        return float(a * j.cores[k])

    def _retry(self, k: int, f: Features, alloc: float) -> float:
        """The next attempt's allocation after a kill at ``alloc`` (MB a job)."""
        j, cores = self.jobs, float(self.jobs.cores[k])
        bound = self.factor * alloc
        if self.side == "engine" and self.online.knows(j.task):  # type: ignore[union-attr]
            a = self.online.retry(j.task, f, bound / cores)  # type: ignore[union-attr]
            if math.isfinite(a) and a * cores > alloc:
                return float(a * cores)
        own = per_core(j.recorded_mb[k], cores, 0.0) if self.side == "recorded" else 0.0
        task_ram = max(self.task_ram, own)
        raised = memory_retry(self.files, k, 0, alloc, cores, 0.0, task_ram)
        if raised.task_ram is not None and raised.task_ram > self.task_ram:
            self.task_ram = raised.task_ram
            self.raises.append((k, raised.task_ram))
        task_ram = max(self.task_ram, own)
        return float(job_min_ram_count(task_ram, self.files.unit_ram[k], cores, 0.0))

    def _job(self, k: int) -> None:
        j, t = self.jobs, self.tally
        need, wall, cores = float(j.need_mb[k]), float(j.wall_s[k]), float(j.cores[k])
        f = self._features(k)
        outcomes: list[Outcome] = []
        alloc = self._first(k, f)
        kills, wasted = 0, t.slack_gbh + t.failed_gbh
        t.jobs += 1
        t.need_gbh += need * wall * GBH
        while True:
            t.attempts += 1
            killed_at = memory_kill_time(wall, need, alloc, self.factor)
            if killed_at is None:
                t.slack_gbh += max(alloc - need, 0.0) * wall * GBH
                t.overuse_gbh += max(need - alloc, 0.0) * wall * GBH
                outcomes.append(Outcome(need / cores, wall, False))
                break
            kills += 1
            t.failed_gbh += alloc * killed_at * GBH
            outcomes.append(Outcome(self.factor * alloc / cores, killed_at, True))
            if kills >= self.max_attempts:
                t.jobs_failed += 1
                break
            alloc = self._retry(k, f, alloc)
        t.kills += kills
        t.jobs_killed_twice += kills > 1
        if k > self.lag:
            t.wasted_after_lag_gbh += t.slack_gbh + t.failed_gbh - wasted
        if self.side == "engine":
            self.pending.append((k, f, outcomes))


def walk_task(
    jobs: TaskJobs,
    side: str,
    factor: float,
    *,
    lag: int = 100,
    max_attempts: int | None = None,
    online: OnlineSide | None = None,
) -> Tally:
    """One side's walk of a task at kill factor ``factor``; ``online``: the sizer's adapter
    (a fresh one for the engine side when None); ``max_attempts``: the replay's setting."""
    attempts = max_attempts or get_settings().replay.max_attempts
    return Walk(jobs, side, factor, lag, attempts, online).run()
