"""The job follower: every ended job of a task scoutless sized teaches the task's online
sizer, and a job failed for memory gets its retry's ramCount where JEDI reads it.

A ``poll`` reads the ended jobs (``finished``/``failed``) of the tasks in the prediction log
from ``jobsactive4`` and ``jobsarchived4``, each from its high-water mark (modificationtime,
pandaid) less ``overlap_s``, page by page in that order (keyset: index-friendly, and it
always moves on). Per job attempt not in the ledger (``panda/job_tables.py``):

1. its outcome (``job_outcomes.outcome``: a need, a memory failure's lower bound, or
   nothing) is learnt by the task's sizer of its kind (``job``, ``scout``, ``merge``), the
   type's state started from the task's ramCount in force when first seen (the
   submission's answer) as ``prior_points`` outcomes;
2. in the same transaction (``PersistentSizer.learn``'s ``also``): a memory failure's retry
   ramCount is written into the job's input files in ``jedi_dataset_contents``
   (``retry_ram``: the sizer's conditional retry, compensated, capped at the queue's maxrss
   and the task's RZ, at least JEDI's ladder step, only upwards); the task's ramCount follows
   the posterior of its ``job`` type (never a ``…Fixed`` unit, never below what the follower
   did not write); the ledger row records all of it. A crash anywhere rolls all of it back,
   and the next poll handles the job again from scratch: nothing is learnt or written twice.
3. its time (``job_times``: a finished job's HS06·s per event, a time-limit kill's lower
   bound) is learnt by the task's walltime type of its kind in the same transaction, and
   the task's ``cpuTime`` and ``walltime`` follow as JEDI's re-tuning sets them.

A task JEDI ended (``forget_statuses``), or idle for ``forget_idle_s``, is forgotten: its
types leave the sizer's memory and are not restored, its jobs are left unread; its
ledger and state rows stay (``scoutless online status`` shows them).

The rollout governs the writes: in ``shadow`` (or for a task of the control arm) the
follower learns and records what it would write, and writes nothing into PanDA's tables.
"""

from __future__ import annotations

import logging
import math
import time
from datetime import datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from scoutless.allocation.arms import SKIPPING_ARMS
from scoutless.config import Settings
from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.history.schema import jedi_tasks
from scoutless.jedi.units import FIXED_UNITS
from scoutless.ops.prediction_log import utcnow
from scoutless.ops.rollout import peek_mode
from scoutless.panda import dead_letters
from scoutless.panda import job_outcomes as jo
from scoutless.panda import job_tables as jt
from scoutless.panda import job_times as jtm
from scoutless.panda.job_forget import forget_ended
from scoutless.panda.job_learns import job_learns
from scoutless.panda.job_reads import (
    TERMINAL,
    Task,
    advance_mark,
    file_counts,
    in_ledger,
    job_pages,
    queue_maxrss,
    queue_value,
    read_mark,
    read_task,
    task_arms,
)
from scoutless.panda.retry_ram import (
    jedi_step,
    ram_count_for,
    retry_ram_count,
    task_floor,
    task_ram_update,
)
from scoutless.sizing.features import Release
from scoutless.sizing.persistent import PersistentSizer
from scoutless.sizing.protocol import Outcome
from scoutless.sizing.state_store import SizingStateStore

log = logging.getLogger("scoutless.panda.job_follower")


#: the ramUnits whose ramCounts are MB per core (None: JEDI's default, MBPerCore); with
#: ``MB`` (per job) increaseRamLimitJobJEDI does not divide by cores, nor would we
PER_CORE_UNITS = frozenset({None, "", "MBPerCore", "MBPerCoreFixed"})


class AlreadyHandled(Exception):
    """The job attempt is in the ledger (handled by this or another process)."""


class JobFollower:
    """Reads ended jobs, learns them, writes retries and the task's ramCount (see above)."""

    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings
        self.s = settings.job_follower
        self.memory_codes = frozenset(self.s.memory_pilot_codes)
        self.time_codes = frozenset(self.s.time_pilot_codes)
        jt.create_follower_tables(engine)
        store = SizingStateStore(engine, keep_outcomes=settings.sizing_state.keep_outcomes)
        store.create()
        with engine.connect() as conn:
            self.forgotten = set(conn.execute(select(jt.forgotten.c.jeditaskid)).scalars())
        self.sizer = PersistentSizer(store, jtm.follower_sizer(settings), settings.sizing_state,
                                     skip=lambda key: jo.task_of(key) in self.forgotten)  # fmt: skip
        self.counts = {"handled": 0, "learnt": 0, "retries_written": 0, "task_writes": 0,
                       "time_writes": 0, "forgotten": 0}  # fmt: skip
        self._forget_checked = -math.inf
        self.failures: dict[int, int] = {}  # pandaid → failed attempts (a poison row's)
        self._swept: dict[str, float] = {}  # job table → when its overlap was last read

    # ------------------------------------------------------------------ reading
    def mode(self) -> str:
        return peek_mode(self.engine) or "shadow"

    def poll(self) -> int:
        """Handle every ended job not handled yet; the job attempts handled."""
        mode, done = self.mode(), 0
        self.forget_ended()
        for table in jt.JOB_TABLES:
            for rows in job_pages(self.engine, table, self._cursor(table.name), self.s.page_rows):
                arms = task_arms(self.engine, {r.jeditaskid for r in rows})
                handled = in_ledger(self.engine, rows)
                for row in rows:
                    if (row.pandaid, row.attemptnr) in handled:
                        continue
                    acting = mode != "shadow" and arms.get(row.jeditaskid) in SKIPPING_ARMS
                    done += self._handle_guarded(row, mode if acting else "shadow")
                advance_mark(self.engine, table.name, rows[-1])
        return done

    def _cursor(self, source: str) -> tuple[datetime, int]:
        """Where a read starts: just after the mark, or ``overlap_s`` below it once every
        ``sweep_interval_s`` (and at start): a row committed late, its modificationtime
        below rows already read, is found by the next sweep."""
        mark = read_mark(self.engine, source)
        if mark is None:
            return (datetime(1970, 1, 1), -1)
        now = time.monotonic()
        if now - self._swept.get(source, -math.inf) < self.s.sweep_interval_s:
            return mark
        self._swept[source] = now
        return (mark[0] - timedelta(seconds=self.s.overlap_s), -1)

    def forget_ended(self, *, force: bool = False) -> list[int]:
        """Forget the tasks JEDI ended or idle ones (at most every ``forget_check_s``); the
        tasks forgotten now."""
        now = time.monotonic()
        if not force and now - self._forget_checked < self.s.forget_check_s:
            return []
        self._forget_checked = now
        ended = forget_ended(self.engine, self.s, self.sizer, self.forgotten)
        self.counts["forgotten"] += len(ended)
        return sorted(ended)

    # ------------------------------------------------------------------ one job
    def _handle_guarded(self, row: jo.JobRow, mode: str) -> int:
        """``handle``, with a row that fails for its own sake (not an outage) retried in
        the next polls and, after ``row_attempts`` failures, put in the ledger with cause
        ``error`` (a poison row must not stop the follower at its mark)."""
        try:
            return self.handle(row, mode)
        except Exception as exc:
            if isinstance(exc, DatabaseUnavailable) or dead_letters.outage(exc):
                raise
            n = self.failures[row.pandaid] = self.failures.get(row.pandaid, 0) + 1
            why = dead_letters.one_line(f"{type(exc).__name__}: {exc}", 500)
            log.error("job %s (task %s): attempt %d failed: %s", row.pandaid, row.jeditaskid,
                      n, why)  # fmt: skip
            if n < self.s.row_attempts:
                raise
            with self.engine.begin() as conn:
                self._record(conn, row, jo.job_kind(row), "error", mode, None, {"error": why})
            self.failures.pop(row.pandaid, None)
            return 1

    def handle(self, row: jo.JobRow, mode: str) -> int:
        """Learn and act on one job attempt; 1 when handled now, 0 when it was already."""
        if self._in_ledger(row):
            return 0
        kind, why = jo.job_kind(row), jo.cause(row, self.memory_codes, self.time_codes)
        with self.engine.connect() as conn:
            task = read_task(conn, row.jeditaskid, lock=False)
            power = (queue_value(conn, row.computingsite, "corepower")
                     if why in jtm.TIMED else None)  # fmt: skip
        learns = job_learns(self.sizer, self.settings, row, kind, why, task, power) if task else []
        try:
            if not learns:  # nothing to learn: the ledger row alone
                try:
                    with self.engine.begin() as conn:
                        self._record(conn, row, kind, why, mode, None, {})
                except IntegrityError:  # another follower recorded it meanwhile
                    raise AlreadyHandled(row.pandaid) from None
            else:
                (key, features, first), *more = learns
                outcomes = {k: o for k, _, o in learns}
                self.sizer.learn(key, features, first, more=more, also=lambda conn: self._act(
                    conn, row, kind, why, mode, outcomes))  # fmt: skip
                self.counts["learnt"] += 1
        except AlreadyHandled:
            return 0
        self.counts["handled"] += 1
        return 1

    def _in_ledger(self, row: jo.JobRow, conn: Connection | None = None) -> bool:
        stmt = select(jt.ledger.c.pandaid).where(
            jt.ledger.c.pandaid == row.pandaid, jt.ledger.c.attemptnr == row.attemptnr
        )
        if conn is not None:
            return conn.execute(stmt).first() is not None
        with self.engine.connect() as c:
            return c.execute(stmt).first() is not None

    def _act(self, conn: Connection, row: jo.JobRow, kind: str, why: jo.Cause, mode: str,
             outcomes: dict[str, Outcome]) -> None:  # fmt: skip
        """In the outcomes' transaction: the retry, the task's ramCount, cpuTime and
        walltime, the ledger row."""
        if self._in_ledger(row, conn):
            raise AlreadyHandled(row.pandaid)
        task = read_task(conn, row.jeditaskid, lock=True)
        key, detail = jo.type_key(row.jeditaskid, kind), {}
        memory = outcomes.get(key)
        if memory is not None:
            detail = self._act_memory(conn, row, key, kind, why, mode, task, memory.need)
        time_key = jtm.time_key(row.jeditaskid, kind)
        timed = outcomes.get(time_key)
        if timed is not None:
            detail["time"] = {"need": timed.need, "bound": timed.censored}
            if kind == "job":
                detail["time"] |= jtm.retune_times(conn, self.sizer, time_key, row, why, task,
                                                   mode, self.s)  # fmt: skip
                self.counts["time_writes"] += int(detail["time"]["written"])
        self._record(conn, row, kind, why, mode, memory.need if memory else None, detail)

    def _act_memory(self, conn: Connection, row: jo.JobRow, key: str, kind: str,
                    why: jo.Cause, mode: str, task: Task, need: float) -> dict[str, Any]:  # fmt: skip
        """The memory failure's retry and the task's ramCount."""
        detail: dict[str, Any] = {}
        if task.ramunit not in PER_CORE_UNITS:  # JEDI's per-job unit: left to JEDI
            detail["skipped"] = f"ramUnit {task.ramunit}: the follower writes MB per core only"
        elif why is jo.Cause.MEMORY:
            detail["retry"] = self._retry(conn, row, key, task, mode, bound=need)
        if kind == "job" and "skipped" not in detail:
            detail["task"] = self._retune(conn, row.jeditaskid, key, task, mode)
        return detail

    def _retry(self, conn: Connection, row: jo.JobRow, key: str, task: Task, mode: str,
               bound: float) -> dict:  # fmt: skip
        """The retry above what the kill revealed (``bound``: its need is past it), from the
        posterior as it stands, the bound learnt in it."""
        features = Release(cores=row.cores)
        sizer = self.sizer.sizer
        sizer.first(key, features)
        need = sizer.retry(key, features, bound)
        files = conn.execute(
            select(jt.filestable4.c.datasetid, jt.filestable4.c.fileid).where(
                jt.filestable4.c.pandaid == row.pandaid, jt.filestable4.c.type.in_(jt.INPUT_TYPES)
            )
        ).all()
        jedi = jedi_step(row.minramcount_mb, row.cores, task.base_mb, task.ramcount or 0.0,
                         file_counts(conn, row.jeditaskid), task.ramunit in FIXED_UNITS)  # fmt: skip
        decision = retry_ram_count(
            need, row.cores, task.base_mb, maxrss_mb=queue_maxrss(conn, row.computingsite),
            split_rule=task.splitrule, jedi=jedi,
        )  # fmt: skip
        raised = 0
        if mode != "shadow" and decision.written > 0:
            c = jt.jedi_dataset_contents.c
            for dataset_id, file_id in files:
                raised += conn.execute(
                    update(jt.jedi_dataset_contents)
                    .where(c.jeditaskid == row.jeditaskid, c.datasetid == dataset_id,
                           c.fileid == file_id,
                           or_(c.ramcount.is_(None), c.ramcount < decision.written))
                    .values(ramcount=decision.written)
                ).rowcount  # fmt: skip
            self.counts["retries_written"] += 1
        log.info("job %s (task %s) failed for memory: retry ramCount %s (sized %s, cap %s, "
                 "JEDI %s), %d files raised%s", row.pandaid, row.jeditaskid, decision.written,
                 decision.sized, decision.cap, decision.jedi, raised,
                 " [shadow: nothing written]" if mode == "shadow" else "")  # fmt: skip
        return {"need": need, "sized": decision.sized, "cap": _finite(decision.cap),
                "jedi": decision.jedi, "written": decision.written, "files": len(files),
                "raised": raised}  # fmt: skip

    def _retune(self, conn: Connection, task_id: int, key: str, task: Task, mode: str) -> dict:
        """The task's ramCount from its ``job`` type's posterior, once that type has learnt
        ``retune_after`` outcomes of its own (JEDI re-tunes after its first 5 jobs)."""
        own = self.sizer.versions.get(key, 0) - 1  # less the prior's version
        if own < self.s.retune_after:
            return {"posterior": None, "written": None}
        need = self.sizer.sizer.first(key, Release(cores=task.cores))
        posterior = ram_count_for(need, task.cores, task.base_mb) if math.isfinite(need) else 0
        t = jt.followed_tasks
        mine = conn.execute(select(t).where(t.c.jeditaskid == task_id)).first()
        last = mine.ramcount_written if mine else None
        floor = task_floor(task.ramcount, last, mine.ramcount_floor if mine else None)
        new = task_ram_update(posterior, task.ramcount, floor, task.ramunit, self.s.min_task_change)
        values: dict[str, Any] = {"ramcount_floor": int(floor) or None}
        if new is not None and task.status not in TERMINAL and mode != "shadow":
            conn.execute(update(jedi_tasks).where(jedi_tasks.c.jeditaskid == task_id)
                         .values(ramcount=new))  # fmt: skip
            values |= {"ramcount_written": new, "written_at": utcnow()}
            self.counts["task_writes"] += 1
        if mine is None:
            conn.execute(insert(t).values(jeditaskid=task_id, **values))
        else:
            conn.execute(update(t).where(t.c.jeditaskid == task_id).values(**values))
        if new is not None:
            log.info("task %s: ramCount %s -> %s (posterior %s, floor %s)%s", task_id,
                     task.ramcount, new, posterior, floor,
                     " [shadow: nothing written]" if mode == "shadow" else "")  # fmt: skip
        return {"posterior": posterior, "floor": floor, "written": new}

    def _record(self, conn: Connection, row: jo.JobRow, kind: str, why: str, mode: str,
                need: float | None, detail: dict) -> None:  # fmt: skip
        retry, retune = detail.get("retry", {}), detail.get("task", {})
        conn.execute(insert(jt.ledger).values(
            pandaid=row.pandaid, attemptnr=row.attemptnr, jeditaskid=row.jeditaskid, kind=kind,
            cause=str(why), need=need, mode=mode, file_ramcount=retry.get("written"),
            files_raised=retry.get("raised"), task_ramcount=retune.get("written"),
            detail=orjson.dumps(detail).decode(), job_modified=row.modificationtime,
            handled_at=utcnow(),
        ))  # fmt: skip


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
