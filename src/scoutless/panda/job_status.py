"""What the job follower holds and did for one task (``scoutless online status TASK``): per
job kind and resource its outcomes, bounds and the posterior's ramCount or cpuTime; the
task's cpuTime and walltime as the follower last wrote them; whether it was forgotten;
its latest jobs with what each made it write. Reads only."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import Engine, inspect, select

from scoutless.config import Settings
from scoutless.history.schema import jedi_tasks
from scoutless.panda import job_tables as jt
from scoutless.panda.job_outcomes import type_key
from scoutless.panda.job_times import follower_sizer, time_key
from scoutless.panda.retry_ram import ram_count_for
from scoutless.sizing.features import Release
from scoutless.sizing.state_store import SizingStateStore

KINDS = ("job", "scout", "merge")


@dataclass(frozen=True)
class KindState:
    kind: str
    outcomes: int  # learnt from the task's jobs (the prior not counted)
    bounds: int  # of which kills' lower bounds (memory, or a time limit)
    posterior_ram: float | None  # the ramCount a job of this kind would get now
    resource: str = "memory"
    posterior_cputime: float | None = None  # walltime: HS06·s per event it would get now


@dataclass
class TaskReport:
    ramcount: int | None = None
    ramunit: str | None = None
    ramcount_written: int | None = None
    ramcount_floor: int | None = None
    cputime: int | None = None
    cputimeunit: str | None = None
    walltime: int | None = None
    times_written: dict[str, Any] = field(default_factory=dict)  # scoutless_job_task_times
    forgotten: dict[str, Any] = field(default_factory=dict)  # reason, forgotten_at
    kinds: list[KindState] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)


def task_status(engine: Engine, task_id: int, settings: Settings, *, limit: int = 20) -> TaskReport:
    """The task's report (empty where the follower has not seen it)."""
    report = TaskReport()
    if not inspect(engine).has_table(jt.ledger.name):
        return report
    with engine.connect() as conn:
        row = conn.execute(
            select(jedi_tasks.c.ramcount, jedi_tasks.c.ramunit, jedi_tasks.c.corecount,
                   jedi_tasks.c.baseramcount, jedi_tasks.c.cputime, jedi_tasks.c.cputimeunit,
                   jedi_tasks.c.walltime).where(jedi_tasks.c.jeditaskid == task_id)
        ).first()  # fmt: skip
        for table, into in (
            (jt.task_times, report.times_written),
            (jt.forgotten, report.forgotten),
        ):
            if inspect(conn).has_table(table.name):
                found = conn.execute(select(table).where(table.c.jeditaskid == task_id))
                into.update({k: v for k, v in (found.mappings().first() or {}).items()
                             if k != "jeditaskid"})  # fmt: skip
        mine = conn.execute(
            select(jt.followed_tasks).where(jt.followed_tasks.c.jeditaskid == task_id)
        ).first()
        ledger = jt.ledger
        report.jobs = [_with_time(dict(r)) for r in conn.execute(
            select(ledger).where(ledger.c.jeditaskid == task_id)
            .order_by(ledger.c.handled_at.desc(), ledger.c.pandaid.desc()).limit(limit)
        ).mappings()]  # fmt: skip
    cores, base = 1.0, 0.0
    if row is not None:
        report.ramcount, report.ramunit = row.ramcount, row.ramunit
        report.cputime, report.cputimeunit, report.walltime = (row.cputime, row.cputimeunit,
                                                               row.walltime)  # fmt: skip
        cores, base = max(float(row.corecount or 1), 1.0), float(row.baseramcount or 0)
    if mine is not None:
        report.ramcount_written, report.ramcount_floor = mine.ramcount_written, mine.ramcount_floor
    report.kinds = _kinds(engine, task_id, settings, cores, base)
    return report


def _with_time(job: dict[str, Any]) -> dict[str, Any]:
    """A ledger row with its time's part of the detail as ``time`` (need, bound, writes)."""
    try:
        detail = orjson.loads(job.get("detail") or "{}")
    except orjson.JSONDecodeError:
        detail = {}
    job["time"] = detail.get("time", {}) if isinstance(detail, dict) else {}
    return job


def _kinds(engine: Engine, task_id: int, settings: Settings, cores: float, base: float
           ) -> list[KindState]:  # fmt: skip
    store = SizingStateStore(engine)
    keys = {type_key(task_id, k): (k, "memory") for k in KINDS}
    keys |= {time_key(task_id, k): (k, "walltime") for k in KINDS}
    states = store.read(keys) if inspect(engine).has_table("scoutless_sizing_state") else {}
    sizer = follower_sizer(settings)
    out = []
    for key, (kind, resource) in keys.items():
        if key not in states:
            continue
        sizer.restore(key, states[key][1])
        learnt = [o for _, f, o in store.outcomes(key) if not f.get("prior")]
        need = sizer.first(key, Release(cores=cores))
        known = need if math.isfinite(need) else None
        bounds = sum(bool(o.get("censored")) for o in learnt)
        if resource == "memory":
            ram = float(ram_count_for(need, cores, base)) if known else None
            out.append(KindState(kind, len(learnt), bounds, ram))
        else:
            out.append(KindState(kind, len(learnt), bounds, None, resource, known))
    return out
