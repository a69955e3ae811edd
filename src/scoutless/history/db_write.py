"""Appending rows to a PanDA-compatible database, fast: one transaction per call (one
autocommitted statement for a few rows on PostgreSQL), through the raw DBAPI where it pays
(multi-row ``INSERT`` on SQLite, ``COPY`` on PostgreSQL), with driver errors raised as
:class:`~scoutless.history.panda_db.DatabaseUnavailable`.

Reading, the engine and the checks of a history are ``history/panda_db.py``'s.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import DateTime, Engine, Integer, Table
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import PoolProxiedConnection

from scoutless.history.dbapi import dbapi_rows
from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.history.schema import (
    metadata,
)


def write_frame(engine: Engine, table_name: str, frame: pd.DataFrame) -> int:
    """Append rows (columns named as in the schema) in one transaction; returns the count."""
    table = metadata.tables[table_name]
    cols = [c for c in frame.columns if c in table.c]
    records = frame[cols].astype(object).where(frame[cols].notna(), None).to_dict("records")
    if not records:
        return 0
    with engine.begin() as conn:
        conn.execute(table.insert(), records)
    return len(records)


def insert_records(engine: Engine, table: Table, records: list[dict[str, Any]]) -> int:
    """Append dict rows in one transaction; on SQLite straight to executemany (no frame,
    no SQLAlchemy per-row processing), elsewhere through :func:`bulk_insert`."""
    if not records:
        return 0
    if engine.dialect.name != "sqlite":
        return bulk_insert(engine, table, pd.DataFrame.from_records(records))
    keys = set().union(*records)  # every row's keys: a later row's key is kept, NULL elsewhere
    cols = [c.name for c in table.columns if c.name in keys]
    rows = [tuple(map(r.get, cols)) for r in records]
    dates = [i for i, c in enumerate(cols) if isinstance(table.c[c].type, DateTime)]
    if dates:  # a log batch shares one timestamp: format each distinct value once
        rows = [_sqlite_dates(row, dates) for row in rows]
    try:
        return _sqlite_insert(engine, table.name, cols, rows, len(rows))
    except (SQLAlchemyError, *_dbapi_errors(engine)) as exc:
        raise DatabaseUnavailable(f"cannot write {len(rows)} rows to {table.name}: {exc}") from exc


def insert_few_postgres(engine: Engine, table: Table, records: list[dict[str, Any]]) -> int:
    """A few dict rows into PostgreSQL, committed, in ONE round trip: one multi-row
    ``INSERT`` through the raw DBAPI connection in autocommit (a key a row lacks is NULL).

    One statement is atomic by itself: all its rows are committed when it returns, or
    none. In a transaction psycopg sent ``BEGIN``, the ``INSERT`` and ``COMMIT`` as three
    round trips; SQLAlchemy's executemany cost about as much CPU as the round trip for the
    service's group commits of a few rows; :func:`bulk_insert` (``COPY``) pays off from a
    few hundred. The pooled connection goes back to the pool out of autocommit, as the
    engine's other users expect it (as SQLAlchemy's own ping does)."""
    if not records:
        return 0
    sql, params = multi_row_insert(table, records)
    try:
        raw = engine.raw_connection()
    except SQLAlchemyError as exc:  # the server cannot be reached
        raise DatabaseUnavailable(
            f"cannot write {len(records)} rows to {table.name}: {exc}"
        ) from exc
    try:
        _autocommit_execute(engine, raw, sql, params)
    except _dbapi_errors(engine) as exc:
        raise DatabaseUnavailable(
            f"cannot write {len(records)} rows to {table.name}: {exc}"
        ) from exc
    finally:
        raw.close()  # back to the pool (invalidated if the connection dropped)
    return len(records)


def multi_row_insert(table: Table, records: list[dict[str, Any]]) -> tuple[str, list[Any]]:
    """One ``INSERT … VALUES (…), (…)`` of dict rows in the driver's ``%s`` style and its
    parameters: the columns any row has, NULL where a row lacks one."""
    keys = set().union(*records)
    cols = [c.name for c in table.columns if c.name in keys]
    row = f"({', '.join(['%s'] * len(cols))})"
    sql = f"INSERT INTO {table.name} ({', '.join(cols)}) VALUES {', '.join([row] * len(records))}"
    return sql, [r.get(c) for r in records for c in cols]


def _autocommit_execute(
    engine: Engine, raw: PoolProxiedConnection, sql: str, params: list[Any]
) -> None:
    """Run one statement on a pooled connection in autocommit, then take it out of
    autocommit again; a connection that dropped is invalidated (the pool opens another)."""
    dbapi_connection, cursor = raw.dbapi_connection, None
    try:
        dbapi_connection.autocommit = True
        cursor = dbapi_connection.cursor()
        cursor.execute(sql, params)
    except _dbapi_errors(engine) as exc:
        if engine.dialect.is_disconnect(exc, dbapi_connection, cursor):
            raw.invalidate(exc)
        raise
    finally:
        if cursor is not None:
            cursor.close()
        _leave_autocommit(engine, raw)


def _leave_autocommit(engine: Engine, raw: PoolProxiedConnection) -> None:
    """Out of autocommit, or invalidated if it cannot be: never raised, since the rows
    may be committed already (a request told otherwise would write them twice)."""
    if not raw.is_valid:
        return
    try:
        raw.dbapi_connection.autocommit = False
    except _dbapi_errors(engine) as exc:
        raw.invalidate(exc)


#: parameters per SQLite statement: 999 is the limit of SQLite before 3.32
SQLITE_MAX_PARAMETERS = 999


def _sqlite_insert(
    engine: Engine, table_name: str, cols: list[str], rows: Iterable[tuple], n_rows: int
) -> int:
    """One transaction of plain tuples through the raw sqlite3 connection, as multi-row
    ``INSERT … VALUES (…), (…)`` statements of up to 999 parameters (SQLite's oldest
    limit): a fifth less CPU than ``executemany``'s one statement run per row."""
    head = f"INSERT INTO {table_name} ({', '.join(cols)}) VALUES "
    group = f"({', '.join('?' * len(cols))})"
    per_statement = max(1, SQLITE_MAX_PARAMETERS // len(cols))
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        it = iter(rows)
        while chunk := list(itertools.islice(it, per_statement)):
            sql = head + ", ".join([group] * len(chunk))  # the sqlite3 module caches it
            cursor.execute(sql, list(itertools.chain.from_iterable(chunk)))
        raw.commit()
    finally:
        raw.close()
    return n_rows


_SQLITE_DATETIME = "%Y-%m-%d %H:%M:%S.%f"  # how SQLAlchemy's DateTime stores values in SQLite


@functools.lru_cache(maxsize=256)
def _sqlite_datetime(value: datetime) -> str:
    return value.strftime(_SQLITE_DATETIME)


def _sqlite_dates(row: tuple, positions: list[int]) -> tuple:
    values = list(row)
    for i in positions:
        if isinstance(values[i], datetime):
            values[i] = _sqlite_datetime(values[i])
    return tuple(values)


def bulk_insert(engine: Engine, table_name: str | Table, frame: pd.DataFrame) -> int:
    """Append many rows fast via the raw DBAPI: one executemany transaction on SQLite,
    ``COPY`` on PostgreSQL, SQLAlchemy executemany elsewhere. Returns the row count.

    Driver errors surface as :class:`DatabaseUnavailable` whatever the path."""
    table = table_name if isinstance(table_name, Table) else metadata.tables[table_name]
    try:
        return _bulk_insert(engine, table, frame)
    except (SQLAlchemyError, *_dbapi_errors(engine)) as exc:
        raise DatabaseUnavailable(f"cannot write {len(frame)} rows to {table.name}: {exc}") from exc


def _dbapi_errors(engine: Engine) -> tuple[type[BaseException], ...]:
    dbapi = getattr(engine.dialect, "dbapi", None)
    error = getattr(dbapi, "Error", None)
    return (error,) if isinstance(error, type) else ()


def _integers_as_integers(frame: pd.DataFrame, table: Table) -> pd.DataFrame:
    """Float columns holding whole numbers, for integer columns, as integers: rows read back
    with a missing value come as floats (600.0), which PostgreSQL's COPY refuses."""
    cast = {}
    for name in frame.columns:
        values = frame[name]
        if isinstance(table.c[name].type, Integer) and pd.api.types.is_float_dtype(values):
            known = values.dropna().to_numpy()
            if np.array_equal(known, np.round(known)):
                cast[name] = values.round().astype("Int64")
    return frame.assign(**cast) if cast else frame


def _bulk_insert(engine: Engine, table: Table, frame: pd.DataFrame) -> int:
    table_name = table.name
    cols = [c.name for c in table.columns if c.name in frame.columns]
    if frame.empty or not cols:
        return 0
    backend = engine.dialect.name
    frame = _integers_as_integers(frame[cols], table)
    if backend == "sqlite":
        rows = dbapi_rows(frame, datetime_text=True)
        return _sqlite_insert(engine, table_name, cols, rows, len(frame))
    if backend == "postgresql" and engine.dialect.driver == "psycopg":
        rows = dbapi_rows(frame, datetime_text=False)
        raw = engine.raw_connection()
        try:
            cur = raw.cursor()
            with cur.copy(f"COPY {table_name} ({', '.join(cols)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            raw.commit()
        finally:
            raw.close()
        return len(frame)
    records = frame.astype(object).where(frame.notna(), None).to_dict("records")
    with engine.begin() as conn:
        conn.execute(table.insert(), records)
    return len(records)
