"""What an ended PanDA job teaches the online sizer: a need, a lower bound, or nothing.

A job row of ``jobsarchived4``/``jobsactive4`` (PanDA's DDL: ``maxpss`` kB, ``minramcount``
MB for the whole job, compensated) is read as:

- ``finished`` with a ``maxpss``: a need, maxPSS per core above the task's baseRamCount (MB
  per core: the unit of ``jedi_tasks.ramcount`` and of ``jedi_dataset_contents.ramcount``),
  and its run (endtime − starttime);
- ``failed`` for memory: a censored need, a lower bound at what the site let it reach —
  the larger of its recorded maxPSS and its allocation (the pilot kills once maxPSS passes
  the job's limit, ``pilot/user/atlas/memory.py``; a cgroup OOM kill happens past it).
  Memory, as PanDAWMS/pilot3 ``pilot/common/errorcodes.py`` names it (commit a090538b):
  ``PAYLOADOUTOFMEMORY = 1212`` (bad_alloc in the payload's output, or the kernel's
  "Memory cgroup out of memory" in dmesg: ``pilot/control/payload.py``
  ``scan_for_memory_errors``) and ``PAYLOADEXCEEDMAXMEM = 1235`` (the memory monitor's
  maxPSS above the limit). 1234 is ``EXECUTEDCLONEJOB``, not memory. The batch system's
  OOM kill reaches PanDA as the payload's exit 137 (128 + SIGKILL) with a diagnostic that
  says memory; a bare 137 is any SIGKILL and stays unknown;
- failed at a time limit: pilot3's ``REACHEDMAXTIME = 1213`` (the batch system's time
  limit reached: ``pilot/control/job.py``) and ``SIGXCPU = 1204`` (the batch system's CPU
  time limit signal): nothing of memory; its run is a lower bound on the job's time
  (``job_times``);
- anything else (another failure, a job with no maxPSS): nothing. An unknown cause is
  never a memory bound, nor a time bound.

Scouts (``specialhandling`` holds ``sj``: ``JobSpec._tagForSH["scoutJob"]``) and merge jobs
(``pm``, ``pmergeJob``, or JEDI's ``processingType = "pmerge"``) are types of their own: a
task's scouts run on fewer events, its merges on its outputs.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from datetime import datetime
from statistics import NormalDist
from typing import Any

from scoutless.replay.ladder import job_min_ram_count
from scoutless.sizing.protocol import Outcome

#: pilot3's memory error codes (PAYLOADOUTOFMEMORY, PAYLOADEXCEEDMAXMEM)
MEMORY_PILOT_CODES: frozenset[int] = frozenset({1212, 1235})
#: pilot3's time-limit error codes (REACHEDMAXTIME, SIGXCPU)
TIME_PILOT_CODES: frozenset[int] = frozenset({1213, 1204})
#: a payload killed by SIGKILL (128 + 9): the batch system's OOM kill among others
SIGKILL_EXIT = "137"
#: words in a diagnostic that make a SIGKILL a memory kill
MEMORY_WORDS = ("out of memory", "oom", "memory limit", "exceeded memory", "memory cgroup")
SCOUT_TAG = "sj"
MERGE_TAGS = frozenset({"pm"})
MERGE_PROCESSING = "pmerge"
#: a task's ramCount in force sits at this quantile of its prior (z of the P90)
PRIOR_AT_Z = NormalDist().inv_cdf(0.9)


class Cause(enum.StrEnum):
    FINISHED = "finished"
    MEMORY = "memory"
    WALLTIME = "walltime"  # killed at a time limit: a lower bound on its time
    OTHER = "other"  # failed for another or an unknown cause: nothing learnt


@dataclass(frozen=True)
class JobRow:
    """The columns of one ended job the follower reads (PanDA's names and units)."""

    pandaid: int
    jeditaskid: int
    attemptnr: int
    jobstatus: str
    modificationtime: datetime
    maxpss_kb: float | None = None
    minramcount_mb: float = 0.0
    corecount: float | None = None
    starttime: datetime | None = None
    endtime: datetime | None = None
    piloterrorcode: int = 0
    transexitcode: str | None = None
    piloterrordiag: str | None = None
    exeerrordiag: str | None = None
    specialhandling: str | None = None
    processingtype: str | None = None
    computingsite: str | None = None
    nevents: float | None = None
    cpuconsumptiontime_s: float | None = None
    inputfilebytes: float | None = None

    @classmethod
    def from_mapping(cls, row: Any) -> JobRow:
        """A database row (mapping) with PanDA's column names."""
        return cls(
            pandaid=int(row["pandaid"]), jeditaskid=int(row["jeditaskid"]),
            attemptnr=int(row["attemptnr"] or 0), jobstatus=str(row["jobstatus"]),
            modificationtime=row["modificationtime"], maxpss_kb=optional_float(row["maxpss"]),
            minramcount_mb=optional_float(row["minramcount"]) or 0.0, corecount=optional_float(row["corecount"]),
            starttime=row["starttime"], endtime=row["endtime"],
            piloterrorcode=int(row["piloterrorcode"] or 0), transexitcode=row["transexitcode"],
            piloterrordiag=row["piloterrordiag"], exeerrordiag=row["exeerrordiag"],
            specialhandling=row["specialhandling"], processingtype=row["processingtype"],
            computingsite=row["computingsite"], nevents=optional_float(row["nevents"]),
            cpuconsumptiontime_s=optional_float(row["cpuconsumptiontime"]),
            inputfilebytes=optional_float(row["inputfilebytes"]),
        )  # fmt: skip

    @property
    def cores(self) -> float:
        return max(float(self.corecount or 1), 1.0)


def optional_float(value: Any) -> float | None:
    """A column's number as a float (None stays None: the column is unknown)."""
    return None if value is None else float(value)


def cause(row: JobRow, memory_codes: frozenset[int] = MEMORY_PILOT_CODES,
          time_codes: frozenset[int] = TIME_PILOT_CODES) -> Cause:  # fmt: skip
    """Why a job ended (see the module's docstring)."""
    if row.jobstatus == "finished":
        return Cause.FINISHED
    if row.jobstatus != "failed":
        return Cause.OTHER
    if row.piloterrorcode in memory_codes:
        return Cause.MEMORY
    if (row.transexitcode or "").strip() == SIGKILL_EXIT:
        diag = f"{row.piloterrordiag or ''} {row.exeerrordiag or ''}".lower()
        if any(word in diag for word in MEMORY_WORDS):
            return Cause.MEMORY
    if row.piloterrorcode in time_codes:
        return Cause.WALLTIME
    return Cause.OTHER


def job_kind(row: JobRow) -> str:
    """``scout``, ``merge`` or ``job``: each its own task type."""
    tags = {t.strip() for t in (row.specialhandling or "").split(",")}
    if SCOUT_TAG in tags:
        return "scout"
    if tags & MERGE_TAGS or row.processingtype == MERGE_PROCESSING:
        return "merge"
    return "job"


def type_key(task_id: int, kind: str) -> str:
    """The sizer's key of a task's jobs of one kind."""
    return f"panda:{task_id}:{kind}"


def task_of(key: str) -> int | None:
    """The jediTaskID of a type key (`type_key`, with or without a resource's suffix)."""
    head, _, rest = key.partition(":")
    task = rest.partition(":")[0]
    return int(task) if head == "panda" and task.isdigit() else None


def per_core(job_mb: float, cores: float, base_mb: float) -> float:
    """A job's memory (MB) as MB per core above baseRamCount (at least 1)."""
    return max((job_mb - base_mb) / max(cores, 1.0), 1.0)


def allocation_per_core(row: JobRow, base_mb: float) -> float:
    """What the job was allowed, MB per core: its ``minRamCount`` (compensated, the value
    brokerage matched and the pilot's limit starts from) less the base, per core."""
    return per_core(row.minramcount_mb, row.cores, base_mb)


def run_seconds(row: JobRow) -> float:
    """endtime − starttime (0 when either is missing)."""
    if row.starttime is None or row.endtime is None:
        return 0.0
    return max((row.endtime - row.starttime).total_seconds(), 0.0)


def outcome(row: JobRow, base_mb: float, memory_codes: frozenset[int] = MEMORY_PILOT_CODES
            ) -> Outcome | None:  # fmt: skip
    """What the job teaches (None: nothing; see the module's docstring)."""
    why = cause(row, memory_codes)
    pss = row.maxpss_kb / 1024.0 if row.maxpss_kb and row.maxpss_kb > 0 else math.nan
    if why is Cause.FINISHED:
        if not math.isfinite(pss):
            return None
        return Outcome(per_core(pss, row.cores, base_mb), run_seconds(row), censored=False)
    if why is Cause.MEMORY:
        reached = per_core(pss, row.cores, base_mb) if math.isfinite(pss) else 0.0
        bound = max(reached, allocation_per_core(row, base_mb))
        return Outcome(bound, run_seconds(row), censored=True)
    return None


def prior_needs(ram_count: float, cores: float, base_mb: float, n: int, spread: float
                ) -> list[float]:  # fmt: skip
    """A task type's prior: ``n`` equally likely needs (MB per core above the base), log-
    normal of ``spread``, whose P90 is what the task's ramCount in force allows a job (its
    compensated minRamCount): the ramCount is an allocation, a high quantile of the need."""
    allowed = per_core(job_min_ram_count(ram_count, 0.0, cores, base_mb), cores, base_mb)
    return points_below(allowed, n, spread)


def points_below(p90: float, n: int, spread: float) -> list[float]:
    """``n`` equally likely values, log-normal of ``spread``, whose P90 is ``p90``."""
    z = [NormalDist().inv_cdf((i + 0.5) / n) - PRIOR_AT_Z for i in range(n)]
    return [p90 * math.exp(spread * q) for q in z]
