"""Read task history from a PanDA-compatible database (SQLite, PostgreSQL, Oracle): the
engine, the checks that a database holds a history, and chunked reads (appending rows is
``history/db_write.py``'s).

All SQL is SQLAlchemy Core over the tables of :mod:`scoutless.history.schema`, so one code
path serves every dialect. Large reads stream in chunks of task ids.
"""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import Engine, create_engine, event, inspect, select
from sqlalchemy.exc import DisconnectionError, SQLAlchemyError

from scoutless.config import PANDA_SCHEMA, parse_db_url
from scoutless.features.extract import task_features
from scoutless.history.schema import (
    ALLOCATION_COLUMNS,
    PANDA_TABLES,
    jedi_datasets,
    jedi_taskparams,
    jedi_tasks,
    jobsarchived4,
    metadata,
)

TASK_COLUMNS = [c.name for c in jedi_tasks.columns]
JOB_COLUMNS = [c.name for c in jobsarchived4.columns if c.name not in ALLOCATION_COLUMNS]
DATASET_COLUMNS = [c.name for c in jedi_datasets.columns]
_ID_CHUNK = 900  # stays below Oracle's 1000-element IN-list limit


class TaskNotFound(LookupError):
    def __init__(self, jeditaskid: int) -> None:
        super().__init__(f"task {jeditaskid} is not in jedi_tasks")
        self.jeditaskid = jeditaskid


class DatabaseUnavailable(RuntimeError):
    """The history database cannot be reached (the service answers 503)."""


class OutdatedSchema(DatabaseUnavailable):
    """The history database lacks columns this version reads (written by an older one)."""


class NotAHistory(DatabaseUnavailable):
    """The database (or SQLite file) is missing, or holds none of PanDA's tables."""


#: database driver module -> the pip install that brings it
DRIVER_INSTALLS = {
    "oracledb": "pip install oracledb (python-oracledb, scoutless's oracle extra; its thin "
    "mode needs no Oracle client libraries)",
    "cx_Oracle": "pip install oracledb (scoutless's oracle extra) and use an "
    "oracle+oracledb:// URL (python-oracledb is cx_Oracle's successor)",
}


class DriverMissing(DatabaseUnavailable):
    """The URL's database driver is not installed: says which extra brings it."""

    def __init__(self, backend: str, module: str) -> None:
        how = DRIVER_INSTALLS.get(module, f"install the Python module {module!r}")
        super().__init__(f"a {backend} URL needs the {module} driver, not installed: {how}")
        self.module = module


def make_history_hint(url: str) -> str:
    """How a user makes a history, said wherever there is none."""
    return (
        f"make one with `scoutless data generate --db {url}` (synthetic) or "
        "`scoutless import` (real traces)"
    )


def history_name(engine: Engine) -> str:
    """The history as a user named it: the SQLite file's path, else the URL (no password)."""
    if engine.dialect.name == "sqlite" and engine.url.database:
        return str(engine.url.database)
    return engine.url.render_as_string(hide_password=True)


def missing_columns(engine: Engine, wanted: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """``wanted`` columns absent from the tables that exist (absent tables are left out)."""
    try:
        inspector = inspect(engine)
        missing = {
            table: sorted(set(columns) - {c["name"] for c in inspector.get_columns(table)})
            for table, columns in wanted.items()
            if inspector.has_table(table)
        }
    except (SQLAlchemyError, OSError) as exc:  # OSError: a host that does not resolve
        raise DatabaseUnavailable(f"cannot read the history's schema: {exc}") from exc
    return {table: columns for table, columns in missing.items() if columns}


def absent_tables(engine: Engine, tables: Sequence[str]) -> list[str]:
    """Those of ``tables`` the database lacks; :class:`DatabaseUnavailable` when it cannot
    be read."""
    try:
        inspector = inspect(engine)
        return [t for t in tables if not inspector.has_table(t)]
    except (SQLAlchemyError, OSError) as exc:  # OSError: a host that does not resolve
        raise DatabaseUnavailable(f"cannot read the history's schema: {exc}") from exc


def require_tables(engine: Engine, tables: Sequence[str]) -> None:
    """Refuse a database without PanDA's ``tables``, naming them and how to make a history."""
    absent = absent_tables(engine, tables)
    if absent:
        raise NotAHistory(
            f"{history_name(engine)} is not a PanDA history: it has no table "
            f"{', '.join(absent)}; "
            f"{make_history_hint(engine.url.render_as_string(hide_password=True))}"
        )


def require_columns(engine: Engine, wanted: Mapping[str, Sequence[str]]) -> None:
    """Refuse, naming every missing column, a database whose tables lack ``wanted`` columns.

    Without it a history written by an older scoutless fails deep inside a chunked read
    with the driver's "no such column"; this says which file, table and columns, and the
    command that adds them (:mod:`scoutless.history.upgrade`).
    """
    missing = missing_columns(engine, wanted)
    if missing:
        listed = "; ".join(f"table {t} lacks {', '.join(c)}" for t, c in missing.items())
        url = engine.url.render_as_string(hide_password=True)
        raise OutdatedSchema(
            f"{history_name(engine)} was written by an older scoutless ({listed}): "
            f"upgrade it in place with `scoutless data upgrade --db {url}`"
        )


def require_history(engine: Engine, job_columns: Sequence[str] | None = JOB_COLUMNS) -> None:
    """Refuse a database that lacks PanDA's tables or the columns :func:`read_history`
    reads (``job_columns`` of jobsarchived4; None: no jobs read), before any read fails."""
    wanted = {"jedi_tasks": TASK_COLUMNS, "jedi_datasets": DATASET_COLUMNS}
    if job_columns is not None:
        wanted["jobsarchived4"] = list(job_columns)
    require_tables(engine, [*wanted, "jedi_taskparams"])
    require_columns(engine, wanted)


@dataclass
class History:
    """Tasks as submitted and their jobs' measured usage."""

    tasks: pd.DataFrame  # jedi_tasks rows
    taskparams: pd.Series  # jeditaskid -> task-parameter JSON text
    datasets: pd.DataFrame  # jedi_datasets rows
    jobs: pd.DataFrame  # jobsarchived4 rows

    def features(self) -> pd.DataFrame:
        return task_features(self.tasks, self.taskparams, self.datasets)


def make_engine(
    url: str,
    *,
    create_dirs: bool = True,
    for_reads: bool = False,
    schema: str | None = PANDA_SCHEMA,
    read_only: bool = False,
    create: bool = True,
) -> Engine:
    """Engine for a URL; SQLite files get their folder created and WAL + busy timeout.
    Text that is not a URL (a file's path) raises :class:`BadDatabaseUrl`.

    ``create=False``: the engine never creates a SQLite file: each connection opens the
    file only if it exists (sqlite3's "no database file" otherwise), so a mistyped path
    stays a missing database instead of becoming an empty one.

    ``read_only``: for commands that only read a user's history. A SQLite file must
    exist (:class:`NotAHistory` otherwise, at once), is never created, keeps its journal
    mode (no switch to WAL) and is opened ``query_only``: nothing in it changes.

    ``for_reads``: an engine for short single-statement reads (the service's task
    lookups): autocommit and no pre-ping, so a read is one round trip and not three; the
    caller retries a dropped connection itself (``history.task_reader.TaskReader``).
    Other engines on a database server ping a pooled connection before use once it has
    been idle ``PING_IDLE_S`` (:func:`ping_when_idle`).

    On PostgreSQL every connection searches ``schema`` (PanDA's ``doma_panda``; a process
    passes its ``Settings.db_schema``; None: the server's default) before ``public``: Core
    statements and raw SQL (``COPY``) then find PanDA's tables without naming a schema,
    and a database without that schema works too (PostgreSQL skips missing schemas in the
    search path)."""
    options: dict[str, Any] = {}
    if for_reads:  # autocommit: no transaction to open, nothing to roll back on return
        options = {"isolation_level": "AUTOCOMMIT", "pool_reset_on_return": None}
    parsed = parse_db_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        if read_only:
            refuse_missing_file(url)
        if create_dirs and create and not read_only:
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        if not (create and not read_only):
            options["creator"] = functools.partial(_open_existing, parsed.database)
        return _sqlite_engine(url, read_only, options)
    if parsed.get_backend_name() == "postgresql" and schema:
        options["connect_args"] = {"options": f"-csearch_path={schema},public"}
    try:
        engine = create_engine(url, **options)
    except ModuleNotFoundError as exc:
        raise DriverMissing(parsed.get_backend_name(), exc.name or str(exc)) from exc
    if not for_reads:
        ping_when_idle(engine, PING_IDLE_S)
    return engine


def _sqlite_engine(url: str, read_only: bool, options: dict[str, Any]) -> Engine:
    """A SQLite file's engine: query-only when ``read_only``, else WAL and synchronous
    NORMAL on every connection."""
    engine = create_engine(url, connect_args={"timeout": 30}, **options)

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn, _record):  # type: ignore[no-untyped-def]
        cur = dbapi_conn.cursor()
        if read_only:
            cur.execute("PRAGMA query_only=ON")
        else:
            set_wal(cur)
            cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    return engine


def refuse_missing_file(url: str) -> None:
    """:class:`NotAHistory` for a SQLite URL whose file does not exist (connecting would
    create an empty one); nothing for a file that exists or a database server."""
    parsed = parse_db_url(url)
    database = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if database not in (None, "", ":memory:") and not Path(database).is_file():
        raise NotAHistory(f"{database} does not exist; {make_history_hint(url)}")


def existing_database(url: str, **options: Any) -> Engine:
    """An engine on a database that must be there already, for commands that read a
    user's history and write beside it (the ops tables, the rollout, the history store):
    a SQLite file that does not exist is refused at once and never created."""
    refuse_missing_file(url)
    return make_engine(url, create=False, **options)


def _open_existing(path: str) -> sqlite3.Connection:
    """A connection to the SQLite file at ``path``, which must exist (connect() would
    create an empty one); SQLAlchemy's pysqlite dialect sets its own options on it."""
    if not Path(path).is_file():
        raise sqlite3.OperationalError(f"no database file {path}")
    return sqlite3.connect(path, timeout=30, check_same_thread=False)


#: a pooled connection idle this long (seconds) is pinged before it is used again
PING_IDLE_S = 1.0


def ping_when_idle(engine: Engine, idle_s: float) -> None:
    """Ping a pooled connection before use only once it has been idle ``idle_s``.

    What dies in a pool is an idle connection (a server restart, a firewall's idle
    timeout): that one is pinged and, dead, replaced before use, as ``pool_pre_ping`` does.
    One in steady use is not pinged: under load the ping per checkout was a tenth of the
    prediction log writer's CPU and a round trip before each group commit. A connection
    that drops between two uses a moment apart fails that use (its caller answers an
    error, nothing is half-written: the transaction is not committed) and is replaced."""

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_conn, record):  # type: ignore[no-untyped-def]
        record.info["checked_in"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_conn, record, _proxy):  # type: ignore[no-untyped-def]
        since = record.info.get("checked_in")
        if since is None or time.monotonic() - since < idle_s:  # new, or in use just now
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
        except Exception as exc:  # the pool replaces it and checks out another
            raise DisconnectionError(f"pooled connection failed its ping: {exc}") from exc


#: how often, and how far apart, a connection retries switching a fresh file to WAL
WAL_ATTEMPTS, WAL_RETRY_S = 100, 0.05


def set_wal(cursor: sqlite3.Cursor) -> None:
    """Put the SQLite file in WAL mode unless it already is (the mode is kept in the file).

    Service workers starting together on a fresh file race to switch it: SQLite answers
    the losers "database is locked" at once, without waiting out the busy timeout (it
    would deadlock), and that stopped a worker's startup. They retry; by then the file is
    usually in WAL mode already, which they read and leave alone."""
    for attempt in range(1, WAL_ATTEMPTS + 1):
        try:
            if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == WAL_ATTEMPTS:
                raise
            time.sleep(WAL_RETRY_S)


def create_schema(engine: Engine) -> None:
    metadata.create_all(engine, tables=list(PANDA_TABLES))


def id_chunks(ids: Sequence[int], size: int = _ID_CHUNK) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield [int(i) for i in ids[start : start + size]]


def _read(engine: Engine, stmt, columns: list[str]) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    try:
        with engine.connect() as conn:
            # plain tuples: given Row objects, pandas probes each one for namedtuple fields
            # (a failed attribute lookup, an exception inside SQLAlchemy): 40% of a read
            rows = [tuple(row) for row in conn.execute(stmt)]
            return pd.DataFrame(rows, columns=columns)
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot read history: {exc.__class__.__name__}: {exc}") from exc


def task_ids(
    engine: Engine, since: datetime | None = None, until: datetime | None = None
) -> list[int]:
    stmt = select(jedi_tasks.c.jeditaskid).order_by(jedi_tasks.c.jeditaskid)
    if since is not None:
        stmt = stmt.where(jedi_tasks.c.creationdate >= since)
    if until is not None:
        stmt = stmt.where(jedi_tasks.c.creationdate < until)
    return _read(engine, stmt, ["jeditaskid"])["jeditaskid"].astype(int).tolist()


def _read_for_tasks(engine: Engine, table, columns: list[str], ids: list[int]) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    stmt = select(*[table.c[c] for c in columns]).where(table.c.jeditaskid.in_(ids))
    return _read(engine, stmt, columns)


def read_history(
    engine: Engine,
    ids: Sequence[int] | None = None,
    *,
    since: datetime | None = None,
    with_jobs: bool = True,
    job_columns: Sequence[str] | None = None,
) -> History:
    """Tasks (all, those created since a date, or the given ids) with datasets and jobs
    (all of jobsarchived4's columns, or just ``job_columns`` for large reads)."""
    job_columns = list(job_columns) if job_columns is not None else JOB_COLUMNS
    require_history(engine, job_columns if with_jobs else None)
    if ids is None:
        ids = task_ids(engine, since=since)
    parts: dict[str, list[pd.DataFrame]] = {"tasks": [], "params": [], "datasets": [], "jobs": []}
    for chunk in id_chunks(list(ids), size=_ID_CHUNK):
        parts["tasks"].append(_read_for_tasks(engine, jedi_tasks, TASK_COLUMNS, chunk))
        parts["params"].append(
            _read_for_tasks(engine, jedi_taskparams, ["jeditaskid", "taskparams"], chunk)
        )
        parts["datasets"].append(_read_for_tasks(engine, jedi_datasets, DATASET_COLUMNS, chunk))
        if with_jobs:
            parts["jobs"].append(_read_for_tasks(engine, jobsarchived4, job_columns, chunk))

    def cat(name: str, columns: list[str]) -> pd.DataFrame:
        frames = [f for f in parts[name] if not f.empty]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)

    params = cat("params", ["jeditaskid", "taskparams"])
    return History(
        tasks=cat("tasks", TASK_COLUMNS),
        taskparams=params.set_index("jeditaskid")["taskparams"],
        datasets=cat("datasets", DATASET_COLUMNS),
        jobs=cat("jobs", job_columns),
    )
