"""Bring a history written by an older scoutless up to this version's tables, in place.

The first generator wrote ``jobsarchived4`` without the job clock and the error codes
(``modificationtime``, ``creationtime``, ``piloterrorcode`` …), ``jedi_datasets`` without
its timestamps, and ``jedi_tasks`` with ``ramcountunit`` where PanDA says ``ramunit``.
Readers refuse such a file, naming what it lacks and ``scoutless data upgrade``; the
upgrade adds each missing column (PanDA's default where it has one, so an old job reads as
PanDA would store it: no error code, defined at the epoch), then fills the columns PanDA
never leaves empty from what the row already holds. The writers (``data generate``,
``import``) upgrade a file they append to and say so.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Column,
    Engine,
    MetaData,
    Table,
    func,
    inspect,
    literal,
    literal_column,
    select,
    update,
)
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.schema import CreateColumn
from sqlalchemy.sql.dml import Update

from scoutless.history.panda_db import DatabaseUnavailable, missing_columns
from scoutless.history.schema import (
    EPOCH,
    PANDA_TABLES,
    jedi_datasets,
    jedi_tasks,
    jobsarchived4,
)


def _fills(added: dict[str, list[str]], old_columns: dict[str, set[str]]) -> list[Update]:
    """UPDATEs giving the rows already there a value PanDA would have stored."""
    fills: list[Update] = []
    if "modificationtime" in added.get("jobsarchived4", []):  # a finished job's last change
        value = func.coalesce(
            jobsarchived4.c.endtime,
            jobsarchived4.c.starttime,
            literal(datetime.fromisoformat(EPOCH)),
        )
        fills.append(update(jobsarchived4).values(modificationtime=value))
    for column, source in (
        ("creationtime", "creationdate"),
        ("modificationtime", "modificationtime"),
    ):
        if column in added.get("jedi_datasets", []):  # a dataset is made with its task
            of_task = (
                select(jedi_tasks.c[source])
                .where(jedi_tasks.c.jeditaskid == jedi_datasets.c.jeditaskid)
                .scalar_subquery()
            )
            fills.append(update(jedi_datasets).values({column: of_task}))
    if "ramunit" in added.get("jedi_tasks", []) and "ramcountunit" in old_columns["jedi_tasks"]:
        fills.append(update(jedi_tasks).values(ramunit=literal_column("ramcountunit")))
    return fills


def upgrade_history(engine: Engine) -> dict[str, list[str]]:
    """Add the columns this version reads to the PanDA tables that lack them; returns
    table -> columns added (empty when the history is current). Tables absent stay absent."""
    wanted = {t.name: [c.name for c in t.columns] for t in PANDA_TABLES}
    added = missing_columns(engine, wanted)
    if not added:
        return {}
    inspector = inspect(engine)
    old_columns = {t: {c["name"] for c in inspector.get_columns(t)} for t in added}
    by_name = {t.name: t for t in PANDA_TABLES}
    preparer = engine.dialect.identifier_preparer
    try:
        with engine.begin() as conn:
            for table, columns in added.items():
                for name in columns:
                    conn.exec_driver_sql(
                        f"ALTER TABLE {preparer.format_table(by_name[table])} ADD "
                        f"{_column_ddl(by_name[table].c[name], engine)}"
                    )
            for statement in _fills(added, old_columns):
                conn.execute(statement)
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot upgrade the history: {exc}") from exc
    return added


def _column_ddl(column: Column[object], engine: Engine) -> str:
    """The column's DDL as ADD COLUMN can take it on rows already there: NOT NULL only
    with a default (SQLite refuses it otherwise; the fills give the others their values)."""
    copy = Column(
        column.name,
        column.type,
        server_default=column.server_default,
        nullable=column.nullable or column.server_default is None,
    )
    Table(column.table.name, MetaData(), copy)  # the compiler asks for the column's table
    return str(CreateColumn(copy).compile(dialect=engine.dialect))


def describe(added: dict[str, list[str]]) -> str:
    """``table jobsarchived4 + creationtime, …; …`` for the command's and writers' message."""
    return "; ".join(f"table {t} + {', '.join(c)}" for t, c in added.items())
