"""What an ended job teaches of a task's time, and the task's ``cpuTime`` and ``walltime``
the job follower writes as JEDI's re-tuning does.

**The need** is the walltime resource (`sizing.resources.walltime`) in cpuTime's unit,
HS06·s per event: JEDI's per-job value at its re-tuning (PanDAWMS/panda-server at
9cc36033, which holds JEDI too: ``taskbuffer/db_proxy_mods/task_utils_module.py``,
``getScoutJobData_JEDI`` as ``setScoutJobData_JEDI`` writes it: ``JobUtils.getHS06sec(
startTime, endTime, corePower, coreCount, baseWalltime, cpuEfficiency) / nEvents``, kept
for jobs with ``nEvents ≥ 10 × coreCount`` or a run over 6 h; corePower the queue's, else
10; a job with no events recorded teaches nothing: its value would not be per event), the
unit a task's jobs share and the one JEDI turns into each job's limit
(``CoreUtils.getJobMaxWalltime``: cpuTime × events / cores / corePower / efficiency +
baseWalltime). A finished job gives it; a job killed at its time limit
(``job_outcomes.TIME_PILOT_CODES``) gives a lower bound at what it ran; anything else,
nothing. Each task's jobs of one kind are a type of their own, key
``panda:<task>:<kind>:walltime`` (`time_key`), sized by the follower's one persistent
sizer with the walltime resource's price of a kill (`follower_sizer`), the retry JEDI
makes of a job killed at its limit — at the queue's maxtime — in it (`retry_limit`).

**The task's cpuTime** follows its ``job`` type's posterior (the allocation the sizer
would give a job now) in JEDI's units: ``mHS06sPerEvent`` (× 1000) below 10 HS06·s,
else ``HS06sPerEvent`` — and, as JEDI, no unit written where the task had none and the
value is 10 or more (``cpuTimeUnit`` NULL is read as HS06sPerEvent, while a unit written
would turn on ``useHS06`` for a task that had it off). Never a ``…Fixed`` unit (JEDI skips
those jobs' cpuTime), never below the highest value seen there that the follower did not
write (JEDI's raise or the submission's), only a move over ``min_task_change``.

**The task's walltime** as JEDI computes it from its finished jobs: their largest
cpuConsumptionTime over their largest input in bytes × 1.5 (0 below an hour of CPU; the
maxima kept in ``scoutless_job_task_times``), the task's own value where larger: JEDI's
rule never lowers it, nor does the follower. ``walltimeUnit`` is left alone: JEDI
re-tunes a running task whose walltimeUnit is NULL (``setScoutJobDataToTasks_JEDI``), and
its re-tuning stays on.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import Connection, insert, select, update

from scoutless.config import JobFollowerSettings, Settings
from scoutless.history.schema import jedi_tasks
from scoutless.jedi.units import CPU_UNIT, CPU_UNIT_MILLI, FIXED_UNITS, cpu_time
from scoutless.ops.prediction_log import utcnow
from scoutless.panda import job_outcomes as jo
from scoutless.panda import job_tables as jt
from scoutless.panda.job_reads import TERMINAL, Task, queue_values
from scoutless.panda.retry_ram import task_floor
from scoutless.sizing.contract_adapter import ContractSizer
from scoutless.sizing.features import Release
from scoutless.sizing.persistent import PersistentSizer
from scoutless.sizing.protocol import Outcome
from scoutless.sizing.resources import walltime

WALLTIME_SUFFIX = ":walltime"
#: JEDI's corePower when neither the host nor the queue gives one
DEFAULT_CORE_POWER = 10.0
#: JEDI keeps a job's cpuTime with at least this many events per core, or a run over 6 h
EVENTS_PER_CORE = 10
LONG_RUN_S = 6 * 3600
#: JEDI's walltime: jobs under an hour of CPU count as 0; the value is × 1.5
WALLTIME_CUTOFF_S = 3600
WALLTIME_MARGIN = 1.5
#: the cpuTime units the follower writes in (per event); others are left to JEDI
PER_EVENT_UNITS = frozenset({None, "", CPU_UNIT, CPU_UNIT_MILLI})


def time_key(task_id: int, kind: str) -> str:
    """The sizer's key of a task's jobs of one kind, for their time."""
    return jo.type_key(task_id, kind) + WALLTIME_SUFFIX


def follower_sizer(settings: Settings) -> ContractSizer:
    """The follower's sizer: memory in MB per core at the replay's online strategy's price
    of a kill (`replay.traces.kill_price`: what the replay measures is what runs), and
    walltime at its resource's prices."""
    from scoutless.replay.traces import MB, kill_price  # the replay's pandas, when first sized

    return ContractSizer(settings.sizing, {WALLTIME_SUFFIX: walltime(settings).failure_price()},
                         price=kill_price(settings, MB))  # fmt: skip


def per_event(task: Task) -> float | None:
    """The task's cpuTime in HS06·s per event (None: none, or not a per-event unit)."""
    unit = task.cputimeunit
    if not task.cputime or task.cputime <= 0:
        return None
    if unit in (CPU_UNIT_MILLI, CPU_UNIT_MILLI + "Fixed"):
        return task.cputime / 1000.0
    if unit in (None, "", CPU_UNIT, CPU_UNIT + "Fixed"):
        return task.cputime
    return None


def hs06_per_event(row: jo.JobRow, task: Task, core_power: float | None) -> float | None:
    """JEDI's HS06·s per event of one job (see the module's docstring; None: not kept)."""
    run = jo.run_seconds(row)
    value = _per_event(run, row, task, core_power)
    if value is None or (row.nevents < EVENTS_PER_CORE * row.cores and run <= LONG_RUN_S):
        return None
    return value


def _per_event(run_s: float, row: jo.JobRow, task: Task, core_power: float | None
               ) -> float | None:  # fmt: skip
    """``getHS06sec`` over the job's events: a run of ``run_s`` less baseWalltime × corePower
    (the queue's, else JEDI's 10) × cores × efficiency (None: no run, events or efficiency)."""
    efficiency = 100.0 if task.cpu_efficiency is None else task.cpu_efficiency
    events = row.nevents or 0.0
    if run_s <= task.base_walltime_s or efficiency <= 0 or events <= 0:
        return None
    power = core_power or DEFAULT_CORE_POWER
    return (run_s - task.base_walltime_s) * power * row.cores * efficiency / 100.0 / events


#: the causes whose run teaches a job's time (a need, a time limit's lower bound)
TIMED = frozenset({jo.Cause.FINISHED, jo.Cause.WALLTIME})


def retry_limit(row: jo.JobRow, task: Task, maxtime_s: float | None,
                core_power: float | None) -> float:  # fmt: skip
    """Where JEDI retries a job of the task killed at its walltime limit: the queue's
    maxtime (``increase_cputime``), in HS06·s per event at this job's events, cores,
    corePower and efficiency (`_per_event` of a run that long); NaN where the maxtime or the
    events are unknown (the sizer's own retries then)."""
    value = _per_event(maxtime_s or 0.0, row, task, core_power)
    return math.nan if value is None else value


def time_outcome(row: jo.JobRow, why: jo.Cause, task: Task, core_power: float | None
                 ) -> Outcome | None:  # fmt: skip
    """A finished job's need, a time-limit kill's lower bound, or nothing (an unknown
    failure is never a bound). Its weight (the engine's ``runtime``) is its cores."""
    if why not in TIMED:
        return None
    value = hs06_per_event(row, task, core_power)
    if value is None or not value > 0:
        return None
    return Outcome(value, row.cores, censored=why is jo.Cause.WALLTIME)


def prior_needs(task: Task, n: int, spread: float) -> list[float]:
    """The type's prior: the task's cpuTime in force as the P90 of ``n`` points (none
    when it has no per-event cpuTime: the type starts from its jobs)."""
    value = per_event(task)
    return [] if value is None else jo.points_below(value, n, spread)


def cpu_time_update(posterior: float, task: Task, floor: float, min_change: float
                    ) -> tuple[int, str | None] | None:  # fmt: skip
    """The task's new (cpuTime, cpuTimeUnit), or None to leave it (module's docstring)."""
    current = per_event(task)
    if task.cputimeunit in FIXED_UNITS or task.cputimeunit not in PER_EVENT_UNITS:
        return None
    if not math.isfinite(posterior) or posterior <= 0:
        return None
    new = max(posterior, floor)
    if current is not None and abs(new - current) <= min_change * current:
        return None
    value, unit = cpu_time(new)
    if unit == CPU_UNIT and not task.cputimeunit:
        return value, task.cputimeunit  # as JEDI: no unit where the task had none
    return value, unit


def walltime_update(max_cpu_s: float, max_bytes: float, current: float | None) -> int | None:
    """The task's walltime by JEDI's rule over the finished jobs learnt: their largest
    cpuConsumptionTime (0 below an hour) over their largest input × 1.5, the task's own
    value where larger (None: leave it)."""
    if max_cpu_s < WALLTIME_CUTOFF_S or max_bytes <= 0:
        return None
    value = math.ceil(max_cpu_s / max_bytes * WALLTIME_MARGIN)
    return value if current is None or value > current else None


def _maxima(mine: Any, row: jo.JobRow, why: jo.Cause) -> tuple[float, float]:
    """The largest cpuConsumptionTime and input bytes over the task's finished jobs learnt."""
    cpu, size = (mine.max_cpu_s or 0.0, mine.max_input_bytes or 0.0) if mine else (0.0, 0.0)
    if why is jo.Cause.FINISHED:
        cpu, size = max(cpu, row.cpuconsumptiontime_s or 0.0), max(size, row.inputfilebytes or 0.0)
    return cpu, size


def retune_times(conn: Connection, sizer: PersistentSizer, key: str, row: jo.JobRow,
                 why: jo.Cause, task: Task, mode: str, s: JobFollowerSettings
                 ) -> dict[str, Any]:  # fmt: skip
    """In the outcome's transaction: the task's cpuTime (once its ``job`` time type learnt
    ``retune_after`` outcomes of its own) and walltime; written unless ``mode`` is shadow
    or the task ended; what was decided returned for the ledger."""
    own = sizer.versions.get(key, 0) - 1  # less the prior's version
    posterior = None
    if own >= s.retune_after:  # a walltime kill priced with JEDI's retry at the maxtime
        queue = queue_values(conn, row.computingsite, ("maxtime", "corepower"))
        limit = retry_limit(row, task, queue["maxtime"], queue["corepower"])
        posterior = sizer.sizer.first(key, Release(cores=task.cores, retry_at=limit))
    t = jt.task_times
    mine = conn.execute(select(t).where(t.c.jeditaskid == row.jeditaskid)).first()
    last = (mine.cputime_written, mine.cputimeunit_written) if mine else None
    current = per_event(task)
    seen = None if last == (task.cputime, task.cputimeunit) else current
    floor = task_floor(seen, None, mine.cputime_floor if mine else None)
    cpu = None if posterior is None else cpu_time_update(posterior, task, floor, s.min_task_change)
    max_cpu, max_bytes = _maxima(mine, row, why)
    wall = walltime_update(max_cpu, max_bytes, task.walltime)
    values: dict[str, Any] = {"cputime_floor": floor or None, "max_cpu_s": max_cpu or None,
                              "max_input_bytes": max_bytes or None}  # fmt: skip
    live = mode != "shadow" and task.status not in TERMINAL
    live = live and (cpu is not None or wall is not None)
    if live:
        writes = ({"cputime": cpu[0], "cputimeunit": cpu[1]} if cpu else {}) | (
            {"walltime": wall} if wall is not None else {})  # fmt: skip
        conn.execute(update(jedi_tasks).where(jedi_tasks.c.jeditaskid == row.jeditaskid)
                     .values(**writes))  # fmt: skip
        values |= {"written_at": utcnow()}
        values |= {"cputime_written": cpu[0], "cputimeunit_written": cpu[1]} if cpu else {}
        values |= {"walltime_written": wall} if wall is not None else {}
    if mine is None:
        conn.execute(insert(t).values(jeditaskid=row.jeditaskid, **values))
    else:
        conn.execute(update(t).where(t.c.jeditaskid == row.jeditaskid).values(**values))
    return {"posterior": _finite(posterior), "floor": floor, "cputime": cpu and cpu[0],
            "cputimeunit": cpu and cpu[1], "walltime": wall, "written": live}  # fmt: skip


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None
