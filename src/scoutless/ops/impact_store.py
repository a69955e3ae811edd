"""What the impact of skipping scouts is computed from, kept in scoutless's own tables.

PanDA keeps jobs in ``jobsarchived4`` for days only (its DDL's comment: three days by
default), so ``monitor impact`` copies, as they finish, the job columns it needs of every
predicted task (attempts, error codes, creation/start/end times, maxPSS and each job's
allocation as PanDA records it: ``minramcount``, ``maxwalltime``, ``maxcpucount``) and the
task's row (creation, status, group, what the scouts set) into ``scoutless_impact_jobs`` and
``scoutless_impact_tasks``. A task is re-read until its status is final; a job is stored
once per ``pandaid`` and replaced when read again, so collecting is idempotent and a purge
of jobsarchived4 after collection loses nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    delete,
    inspect,
    select,
)
from sqlalchemy.exc import SQLAlchemyError

from scoutless.history.panda_db import (
    DatabaseUnavailable,
    OutdatedSchema,
    id_chunks,
    read_history,
)
from scoutless.ops.actuals import FINISHED_STATUSES
from scoutless.ops.prediction_log import PredictionLog, utcnow

#: jobsarchived4's columns the impact needs, with PanDA's names
IMPACT_JOB_COLUMNS = (
    "pandaid", "jeditaskid", "jobstatus", "specialhandling", "attemptnr", "piloterrorcode",
    "creationtime", "starttime", "endtime", "corecount", "maxpss",
    "minramcount", "maxwalltime", "maxcpucount",
)  # fmt: skip
#: jedi_tasks' columns: creation, status, the groups a canary is scoped by, what scouts set
IMPACT_TASK_COLUMNS = (
    "jeditaskid", "status", "creationdate", "modificationtime", "gshare", "processingtype",
    "workqueue_id", "ramcount", "cputime", "cputimeunit", "walltime",
)  # fmt: skip

impact_metadata = MetaData()

impact_jobs = Table(
    "scoutless_impact_jobs",
    impact_metadata,
    Column("pandaid", BigInteger, primary_key=True, autoincrement=False),
    Column("jeditaskid", BigInteger, nullable=False, index=True),
    Column("jobstatus", String(15), nullable=False),
    Column("is_scout", Boolean, nullable=False),
    Column("attemptnr", Integer, nullable=False),
    Column("piloterrorcode", Integer, nullable=False),
    Column("creationtime", DateTime),
    Column("starttime", DateTime),
    Column("endtime", DateTime),
    Column("corecount", Integer),
    Column("maxpss", BigInteger),  # kB
    Column("minramcount", BigInteger),  # MB
    Column("maxwalltime", BigInteger),  # s
    Column("maxcpucount", BigInteger),  # s
)

impact_tasks = Table(
    "scoutless_impact_tasks",
    impact_metadata,
    Column("jeditaskid", BigInteger, primary_key=True, autoincrement=False),
    Column("status", String(64), nullable=False),
    Column("creationdate", DateTime, nullable=False),
    Column("modificationtime", DateTime),
    Column("gshare", String(32)),
    Column("processingtype", String(64)),
    Column("workqueue_id", Integer),
    Column("ramcount", Float),  # what the scouts (or the prediction applied) set
    Column("walltime", Float),
    Column("final", Boolean, nullable=False),
    Column("collected_at", DateTime, nullable=False),
    # added later (ALTER TABLE on an older store)
    Column("cputime", Float),
    Column("cputimeunit", String(32)),
)
#: columns added after the store's first layout: nullable, added on start
ADDED_TASK_COLUMNS = ("cputime", "cputimeunit")

JOB_FIELDS = [c.name for c in impact_jobs.columns]
TASK_FIELDS = [c.name for c in impact_tasks.columns]


class ImpactError(ValueError):
    """The impact cannot be computed (names the table, the columns or the setting)."""


@dataclass(frozen=True)
class ImpactCollect:
    n_predicted: int
    n_read: int
    n_final: int
    n_jobs: int


def create_impact_tables(engine: Engine) -> None:
    try:
        impact_metadata.create_all(engine)
        present = {c["name"] for c in inspect(engine).get_columns(impact_tasks.name)}
        for name in [c for c in ADDED_TASK_COLUMNS if c not in present]:
            kind = impact_tasks.c[name].type.compile(dialect=engine.dialect)
            with engine.begin() as conn:
                conn.exec_driver_sql(f"ALTER TABLE {impact_tasks.name} ADD COLUMN {name} {kind}")
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot create the impact tables: {exc}") from exc


def _final_ids(engine: Engine) -> set[int]:
    t = impact_tasks
    with engine.connect() as conn:
        return set(conn.execute(select(t.c.jeditaskid).where(t.c.final.is_(True))).scalars())


def collect_impact(engine: Engine, log_engine: Engine | None = None) -> ImpactCollect:
    """Copy the jobs and tasks of predicted, not yet final tasks from PanDA's tables."""
    ops = log_engine or engine
    create_impact_tables(ops)
    predicted = PredictionLog(ops).task_ids()
    pending = sorted(set(predicted) - _final_ids(ops))
    if not pending:
        return ImpactCollect(len(predicted), 0, 0, 0)
    try:
        history = read_history(engine, pending, job_columns=IMPACT_JOB_COLUMNS)
    except OutdatedSchema as exc:
        raise ImpactError(
            f"{exc}; monitor impact needs jobsarchived4's {', '.join(IMPACT_JOB_COLUMNS)}"
        ) from exc
    tasks = _task_rows(history.tasks)
    jobs = _job_rows(history.jobs)
    _replace(ops, impact_jobs, "pandaid", jobs)
    _replace(ops, impact_tasks, "jeditaskid", tasks)
    return ImpactCollect(len(predicted), len(tasks), int(tasks["final"].sum()), len(jobs))


def _task_rows(tasks: pd.DataFrame) -> pd.DataFrame:
    out = tasks.reindex(columns=list(IMPACT_TASK_COLUMNS)).copy()
    out["final"] = out["status"].astype(str).str.lower().isin(FINISHED_STATUSES)
    out["collected_at"] = utcnow()
    return out


def _job_rows(jobs: pd.DataFrame) -> pd.DataFrame:
    out = jobs.reindex(columns=list(IMPACT_JOB_COLUMNS)).copy()
    out["is_scout"] = out.pop("specialhandling").fillna("").astype(str).str.contains("sj")
    return out


def _replace(engine: Engine, table: Table, key: str, frame: pd.DataFrame) -> None:
    """Delete the rows of these keys and insert the frame, in one transaction."""
    if frame.empty:
        return
    names = [c.name for c in table.columns]
    records = [_plain(r) for r in frame[names].to_dict("records")]
    keys = [int(r[key]) for r in records]
    try:
        with engine.begin() as conn:
            for chunk in id_chunks(keys):
                conn.execute(delete(table).where(table.c[key].in_(chunk)))
            conn.execute(table.insert(), records)
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(
            f"cannot store {len(records)} rows in {table.name}: {exc}"
        ) from exc


def _plain(record: dict[str, Any]) -> dict[str, Any]:
    """Python values for the driver: NaN/NaT → None, numpy scalars → Python, Timestamps →
    datetimes."""
    out = {}
    for k, v in record.items():
        if v is None or (not isinstance(v, str) and pd.isna(v)):
            out[k] = None
        elif isinstance(v, pd.Timestamp):
            out[k] = v.to_pydatetime()
        elif isinstance(v, np.generic):
            out[k] = v.item()
        else:
            out[k] = v
    return out


def read_impact(
    engine: Engine, ids: Sequence[int] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(tasks, jobs) as collected."""
    create_impact_tables(engine)
    frames = []
    for table, fields in ((impact_tasks, TASK_FIELDS), (impact_jobs, JOB_FIELDS)):
        stmt = select(table)
        if ids is not None:
            stmt = stmt.where(table.c.jeditaskid.in_([int(i) for i in ids]))
        with engine.connect() as conn:
            frames.append(pd.DataFrame(conn.execute(stmt).fetchall(), columns=fields))
    return frames[0], frames[1]
