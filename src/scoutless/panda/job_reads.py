"""The job follower's reads of PanDA's tables (``panda/job_tables.py``'s views): the
ended jobs page by page from a mark, the task's columns, its files by ramCount, a queue's
maxrss, and the mark itself. No sizing here."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

import orjson
from sqlalchemy import Connection, Engine, Select, Table, and_, func, insert, or_, select, update

from scoutless.history.schema import jedi_datasets, jedi_tasks
from scoutless.ops.prediction_log import predictions_table
from scoutless.panda import job_outcomes as jo
from scoutless.panda import job_tables as jt

ENDED = ("finished", "failed")
#: task statuses JEDI generates no more jobs in: their ramCount, cpuTime and walltime are
#: left alone
TERMINAL = frozenset({"done", "finished", "failed", "broken", "aborted", "aborting"})


@dataclass(frozen=True)
class Task:
    ramcount: float | None
    ramunit: str | None
    base_mb: float
    cores: float
    splitrule: str | None
    status: str
    cputime: float | None = None
    cputimeunit: str | None = None
    walltime: float | None = None
    base_walltime_s: float = 0.0
    cpu_efficiency: float | None = None


def read_mark(engine: Engine, source: str) -> tuple[datetime, int] | None:
    """The high-water mark (modificationtime, pandaid) of a job table (None: none yet)."""
    with engine.connect() as conn:
        mark = conn.execute(select(jt.marks).where(jt.marks.c.source == source)).first()
    return None if mark is None else (mark.modificationtime, int(mark.pandaid))


def followed_tasks() -> Select:
    """The tasks the follower reads the jobs of: those scoutless sized, not forgotten."""
    p = predictions_table.c
    return select(p.jeditaskid).where(
        p.jeditaskid.is_not(None), p.jeditaskid.not_in(select(jt.forgotten.c.jeditaskid))
    )


def job_pages(engine: Engine, table: Table, cursor: tuple[datetime, int], page_rows: int
              ) -> Iterator[list[jo.JobRow]]:  # fmt: skip
    """The ended jobs of the followed tasks in ``table`` after ``cursor`` (modificationtime,
    pandaid), in that order, ``page_rows`` at a time (keyset pages)."""
    followed = followed_tasks()
    c = table.c
    while True:
        after = or_(c.modificationtime > cursor[0],
                    and_(c.modificationtime == cursor[0], c.pandaid > cursor[1]))  # fmt: skip
        stmt = (
            select(table)
            .where(after, c.jobstatus.in_(ENDED), c.jeditaskid.in_(followed))
            .order_by(c.modificationtime, c.pandaid)
            .limit(page_rows)
        )
        with engine.connect() as conn:
            rows = [jo.JobRow.from_mapping(r) for r in conn.execute(stmt).mappings()]
        if not rows:
            return
        yield rows
        cursor = (rows[-1].modificationtime, rows[-1].pandaid)
        if len(rows) < page_rows:
            return


def task_arms(engine: Engine, tasks: set[int]) -> dict[int, str | None]:
    """Each task's rollout arm as its prediction was logged."""
    t = predictions_table
    stmt = select(t.c.jeditaskid, func.max(t.c.arm)).where(t.c.jeditaskid.in_(sorted(tasks)))
    with engine.connect() as conn:
        return dict(conn.execute(stmt.group_by(t.c.jeditaskid)).all())


def advance_mark(engine: Engine, source: str, row: jo.JobRow) -> None:
    """The mark only moves up (a page re-read below it leaves it)."""
    m = jt.marks
    with engine.begin() as conn:
        old = conn.execute(select(m).where(m.c.source == source).with_for_update()).first()
        new = {"modificationtime": row.modificationtime, "pandaid": row.pandaid}
        if old is None:
            conn.execute(insert(m).values(source=source, **new))
        elif (old.modificationtime, old.pandaid) < (row.modificationtime, row.pandaid):
            conn.execute(update(m).where(m.c.source == source).values(**new))


def read_task(conn: Connection, task_id: int, *, lock: bool) -> Task | None:
    t = jedi_tasks.c
    stmt = select(
        t.ramcount,
        t.ramunit,
        t.baseramcount,
        t.corecount,
        t.splitrule,
        t.status,
        t.cputime,
        t.cputimeunit,
        t.walltime,
        t.basewalltime,
        t.cpuefficiency,
    )
    stmt = stmt.where(t.jeditaskid == task_id)  # fmt: skip
    row = conn.execute(stmt.with_for_update() if lock else stmt).first()
    if row is None:
        return None
    return Task(
        ramcount=float(row.ramcount) if row.ramcount else None, ramunit=row.ramunit,
        base_mb=float(row.baseramcount or 0), cores=max(float(row.corecount or 1), 1.0),
        splitrule=row.splitrule, status=row.status, cputime=jo.optional_float(row.cputime),
        cputimeunit=row.cputimeunit, walltime=jo.optional_float(row.walltime),
        base_walltime_s=float(row.basewalltime or 0), cpu_efficiency=jo.optional_float(row.cpuefficiency),
    )  # fmt: skip


def file_counts(conn: Connection, task_id: int) -> dict[float, int]:
    """The task's master input files by ramCount, as ``increaseRamLimitJobJEDI`` reads them."""
    c, d = jt.jedi_dataset_contents.c, jedi_datasets.c
    stmt = (
        select(c.ramcount, func.count())
        .select_from(jt.jedi_dataset_contents.join(
            jedi_datasets, and_(d.jeditaskid == c.jeditaskid, d.datasetid == c.datasetid)))
        .where(c.jeditaskid == task_id, d.type.in_(jt.INPUT_TYPES), d.masterid.is_(None))
        .group_by(c.ramcount)
    )  # fmt: skip
    counts: dict[float, int] = {}
    for ram, n in conn.execute(stmt).all():  # NULL counts as 0, an unraised file
        counts[float(ram or 0)] = counts.get(float(ram or 0), 0) + int(n)
    return counts


def queue_maxrss(conn: Connection, queue: str | None) -> float | None:
    """The queue's maxrss (MB) from its schedconfig JSON (None: unknown, no cap)."""
    return queue_value(conn, queue, "maxrss")


def queue_value(conn: Connection, queue: str | None, name: str) -> float | None:
    """A positive number of the queue's schedconfig JSON (``maxrss``, ``corepower``; None:
    unknown)."""
    return queue_values(conn, queue, (name,))[name]


def queue_values(conn: Connection, queue: str | None, names: tuple[str, ...]
                 ) -> dict[str, float | None]:  # fmt: skip
    """Several positive numbers of the queue's schedconfig JSON in one read (each None:
    unknown)."""
    data = None
    if queue:
        data = conn.execute(
            select(jt.schedconfig_json.c.data).where(jt.schedconfig_json.c.panda_queue == queue)
        ).scalar()
    if isinstance(data, str):
        data = orjson.loads(data)
    values = {name: (data or {}).get(name) for name in names}
    return {n: float(v) if isinstance(v, int | float) and v > 0 else None
            for n, v in values.items()}  # fmt: skip


def tasks_to_forget(conn: Connection, statuses: tuple[str, ...], idle_before: datetime | None
                    ) -> dict[int, str]:  # fmt: skip
    """The followed tasks not forgotten yet that JEDI ended (one of ``statuses``) or whose
    last job was handled before ``idle_before`` (None: none by idleness): task → reason."""
    t, led = jedi_tasks.c, jt.ledger.c
    followed = followed_tasks().distinct().subquery()
    ended = select(t.jeditaskid, t.status).where(
        t.jeditaskid.in_(select(followed.c.jeditaskid)), t.status.in_(statuses)
    )
    out = {int(task): str(status) for task, status in conn.execute(ended).all()}
    if idle_before is not None:
        idle = (
            select(led.jeditaskid)
            .where(led.jeditaskid.in_(select(followed.c.jeditaskid)))
            .group_by(led.jeditaskid)
            .having(func.max(led.handled_at) < idle_before)
        )
        out |= {int(task): "idle" for (task,) in conn.execute(idle).all() if task not in out}
    return out


def in_ledger(engine: Engine, rows: list[jo.JobRow]) -> set[tuple[int, int]]:
    """The (pandaid, attemptnr) of ``rows`` already handled (one statement a page)."""
    ids = sorted({r.pandaid for r in rows})
    stmt = select(jt.ledger.c.pandaid, jt.ledger.c.attemptnr).where(jt.ledger.c.pandaid.in_(ids))
    with engine.connect() as conn:
        return {(int(p), int(a)) for p, a in conn.execute(stmt).all()}
