"""One task's feature inputs read by id: the service's database path, one round trip.

``GET /v1/tasks/{id}/prediction`` is the path PanDA uses, so it has to be fast: one
statement reads the task's ``jedi_tasks`` columns, its parameters and its datasets
(outer joins), compiled once per database and executed on the driver directly (on
PostgreSQL psycopg turns a statement run repeatedly into a server-side prepared one).
A group of tasks (the service's reads of a loop turn) is one statement on PostgreSQL,
``jeditaskid = ANY(:ids)``: a round trip and a statement's CPU per group, not per task.
The rows then go through ``features.extract.features_of``, the code that builds the
training table, so a task fetched here gets exactly its training features. On SQLite
each thread keeps its own read-only connection with the file memory-mapped: a pool
checkout costs more than the indexed read itself.
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import ARRAY, BigInteger, Engine, Select, any_, bindparam, cast, inspect, select
from sqlalchemy.exc import SQLAlchemyError

from scoutless.config import HistorySettings
from scoutless.features.domains import Domain
from scoutless.features.extract import (
    DATASET_COLUMNS_READ,
    TASK_COLUMNS_READ,
    features_of,
    parse_taskparams,
)
from scoutless.features.history import HistoryLayout, history_keys
from scoutless.features.key_state import KeyState
from scoutless.features.normalise import category_text
from scoutless.history.panda_db import DatabaseUnavailable, TaskNotFound, absent_tables
from scoutless.history.schema import jedi_datasets, jedi_taskparams, jedi_tasks
from scoutless.history.store import (
    HISTORY_TABLE,
    LEGACY_TABLE,
    StateKey,
    create_history_table,
    read_states,
)
from scoutless.history.store_reader import (
    SUBMITTED,
    join_states,
    key_pairs,
    layout_keys,
    records_history,
)

log = logging.getLogger(__name__)

TaskInputs = tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]


#: how much of a SQLite history file a reader maps into memory (reads then skip a syscall)
SQLITE_MMAP_BYTES = 1 << 30


class BadTaskRecord(ValueError):
    """A task row the feature code cannot read (task parameters that are not a JSON object),
    or whose numbers lie outside their fields' domains (``features.domains``)."""


def domain_checked(
    jeditaskid: int, features: dict[str, Any], table: Mapping[str, Domain]
) -> dict[str, Any]:
    """A stored task's features, refused where a number is no task a site could run (2**62
    cores): such a task is never answered or published. One task: plain Python."""
    for name, domain in table.items():
        if (why := domain.problem(features.get(name))) is not None:
            raise BadTaskRecord(f"task {jeditaskid}: {domain.source}: {why}")
    return features


#: The store's keys for PanDA tasks (user, transformation, campaign), as jedi_tasks columns.
TASK_HISTORY_KEYS: dict[str, str] = history_keys(["creationdate", *TASK_COLUMNS_READ])


def single_task_statement(*, with_history: bool = False) -> Select:
    """Task, parameters and datasets of one task in ONE statement.

    Each row is the task part (``jedi_tasks`` columns, then ``taskparams``: constant per
    task) followed by one ``jedi_datasets`` row; a task without parameters or datasets
    still comes back once. Per-task columns of another table (e.g. per-user history joined
    on ``username``) go at the end of ``task_part`` with their outer join in ``source``:
    they reach ``features_of`` in the task mapping, still in the same round trip.
    """
    return _task_rows(with_history).where(jedi_tasks.c.jeditaskid == bindparam("jeditaskid"))


def group_task_statement(*, with_history: bool = False) -> Select:
    """:func:`single_task_statement`'s rows for a group of tasks, each row ending with its
    task id: ``jeditaskid = ANY(:jeditaskids)`` with one ``BIGINT[]`` parameter, so the
    statement's text is the same whatever the group's size (psycopg prepares it once).
    For PostgreSQL: other databases read a group one task at a time."""
    ids = cast(bindparam("jeditaskids"), ARRAY(BigInteger))
    t = jedi_tasks
    return (
        _task_rows(with_history)
        .add_columns(t.c.jeditaskid.label("group_jeditaskid"))
        .where(t.c.jeditaskid == any_(ids))
    )


def _task_rows(with_history: bool) -> Select:
    """The columns and outer joins of :func:`single_task_statement`, no WHERE clause."""
    t, p, d = jedi_tasks, jedi_taskparams, jedi_datasets
    task_part = [t.c[c] for c in TASK_COLUMNS_READ if c in t.c] + [p.c.taskparams]
    dataset_part = [d.c.datasetid, *(d.c[c] for c in DATASET_COLUMNS_READ)]
    source = t.outerjoin(p, p.c.jeditaskid == t.c.jeditaskid)
    if with_history:  # the history-feature store's rows of the task's keys
        source, history = join_states(source, t, TASK_HISTORY_KEYS)
        task_part += [t.c.creationdate.label(SUBMITTED), *history]
    source = source.outerjoin(d, d.c.jeditaskid == t.c.jeditaskid)
    return select(*task_part, *(c.label(f"dataset_{c.name}") for c in dataset_part)).select_from(
        source
    )


def _ready_store(engine: Engine) -> bool:
    """Move a store in the legacy layout into the current one (the first reader to start on
    it does), then say whether the database holds the store (False while it cannot be
    reached: the task path then answers 503 on its own)."""
    try:
        legacy = inspect(engine).has_table(LEGACY_TABLE)
    except SQLAlchemyError:
        return False
    try:
        if legacy:
            create_history_table(engine.execution_options(isolation_level="SERIALIZABLE"))
        return inspect(engine).has_table(HISTORY_TABLE)
    except SQLAlchemyError as exc:  # e.g. a read-only user: tasks are answered and flagged
        if legacy:
            log.warning("history store in its first layout (%s) not migrated, served without "
                        "history until a writer moves it: %s", LEGACY_TABLE, exc)  # fmt: skip
        return False


#: the tables a read by id joins (``single_task_statement``)
BY_ID_TABLES: tuple[str, ...] = (jedi_tasks.name, jedi_taskparams.name, jedi_datasets.name)


class TaskReader:
    """Reads tasks by id through one statement compiled for ``engine``'s database.

    Built for an engine from ``make_engine(url, for_reads=True)`` (autocommit, no
    pre-ping): a connection the server dropped is replaced and the read retried once.
    """

    def __init__(self, engine: Engine, *, with_history: bool | None = None) -> None:
        self.engine = engine
        if with_history is not False:  # join the store where the database has one
            found = _ready_store(engine)
            with_history = found if with_history is None else with_history
        self.with_history = with_history
        statement = single_task_statement(with_history=with_history)
        compiled = statement.compile(dialect=engine.dialect)
        self._sql = str(compiled)
        self._positional = bool(compiled.positional)
        names = [c.name for c in statement.selected_columns]
        self._n_task = len(names) - len(DATASET_COLUMNS_READ) - 1
        self._task_keys = names[: self._n_task]
        self._datasets = slice(self._n_task + 1, self._n_task + 1 + len(DATASET_COLUMNS_READ))
        self._group_sql = (  # a group of tasks in one statement: PostgreSQL's arrays
            str(group_task_statement(with_history=with_history).compile(dialect=engine.dialect))
            if engine.dialect.name == "postgresql"
            else None
        )
        dbapi_error = getattr(engine.dialect.dbapi, "Error", None)
        self._driver_errors = (dbapi_error,) if isinstance(dbapi_error, type) else ()
        database = engine.url.database if engine.dialect.name == "sqlite" else None
        self._sqlite_file = database if database not in (None, "", ":memory:") else None
        self._local = threading.local()
        self._tables_ok = False  # every table of BY_ID_TABLES found, no read failed since

    def rows(self, jeditaskid: int) -> list[tuple[Any, ...]]:
        """The statement's raw rows for one task; :class:`DatabaseUnavailable` on failure."""
        args: Any = (int(jeditaskid),) if self._positional else {"jeditaskid": int(jeditaskid)}
        try:
            return self._execute(self._sql, args)
        except (SQLAlchemyError, *self._driver_errors) as exc:
            self._tables_ok = False
            raise DatabaseUnavailable(f"cannot read task {jeditaskid}: {exc}") from exc

    def group_rows(self, jeditaskids: Sequence[int]) -> dict[int, list[tuple[Any, ...]]]:
        """The grouped statement's raw rows by task id (a task not found has none), in one
        round trip; :class:`DatabaseUnavailable` on failure. PostgreSQL only."""
        if self._group_sql is None:
            raise TypeError(f"no grouped task read on {self.engine.dialect.name}")
        ids = [int(i) for i in jeditaskids]
        args: Any = (ids,) if self._positional else {"jeditaskids": ids}
        try:
            rows = self._execute(self._group_sql, args)
        except (SQLAlchemyError, *self._driver_errors) as exc:
            self._tables_ok = False
            raise DatabaseUnavailable(f"cannot read tasks {ids}: {exc}") from exc
        by_task: dict[int, list[tuple[Any, ...]]] = {}
        for row in rows:  # the task id is the last column
            by_task.setdefault(row[-1], []).append(row)
        return by_task

    def missing_tables(self) -> list[str] | None:
        """The tables a read by id needs that the database lacks (all of them for a SQLite
        file that does not exist); None while the database cannot be reached. Once all are
        found they are not looked for again until a read fails."""
        if self._tables_ok:
            return []
        if self._sqlite_file is not None and not os.path.exists(self._sqlite_file):
            return list(BY_ID_TABLES)
        try:
            missing = absent_tables(self.engine, BY_ID_TABLES)
        except DatabaseUnavailable:
            return None
        self._tables_ok = not missing
        return missing

    def _execute(self, sql: str, args: Any) -> list[tuple[Any, ...]]:
        if self._sqlite_file is not None:
            return self._sqlite_connection().execute(sql, args).fetchall()
        held = getattr(self._local, "held", False)  # inside one_connection(): one connection
        for attempt in (1, 2):
            raw = self._local.raw if held and self._local.raw else self.engine.raw_connection()
            if held:
                self._local.raw = raw
            cursor = None
            try:
                cursor = raw.cursor()
                cursor.execute(sql, args)
                return list(cursor.fetchall())
            except self._driver_errors as exc:
                dropped = self.engine.dialect.is_disconnect(exc, raw.dbapi_connection, cursor)
                if attempt == 2 or not dropped:
                    raise
                raw.invalidate(exc)  # a fresh connection for the retry
                if held:
                    self._local.raw = None
            finally:
                if cursor is not None:
                    cursor.close()
                if not held:
                    raw.close()
        raise AssertionError("unreachable")

    @contextmanager
    def one_connection(self) -> Iterator[None]:
        """This thread's reads inside share one pooled connection: a group's reads take
        one pool checkout, not one each (the engine autocommits: no transaction is held
        open between them). SQLite files keep their per-thread connection anyway."""
        if self._sqlite_file is not None or getattr(self._local, "held", False):
            yield
            return
        self._local.held, self._local.raw = True, None
        try:
            yield
        finally:
            raw, self._local.raw, self._local.held = self._local.raw, None, False
            if raw is not None:
                raw.close()

    @property
    def local(self) -> bool:
        """Whether reads go to a local SQLite file (fast enough to make inline)."""
        return self._sqlite_file is not None

    def _sqlite_connection(self) -> sqlite3.Connection:
        """This thread's connection to the SQLite file (opened on first use, kept)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if not os.path.exists(self._sqlite_file):  # connect() would create an empty one
                raise sqlite3.OperationalError(f"no database file {self._sqlite_file}")
            conn = sqlite3.connect(self._sqlite_file, timeout=30, isolation_level=None)
            conn.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
            conn.execute("PRAGMA query_only=ON")
            self._local.conn = conn
        return conn

    def inputs(self, jeditaskid: int) -> TaskInputs:
        """The task's jedi_tasks columns, decoded parameters and dataset rows."""
        return self._decoded(jeditaskid, self.rows(jeditaskid))

    def inputs_many(self, jeditaskids: Sequence[int]) -> list[TaskInputs | Exception]:
        """Each task's :meth:`inputs`, or the exception its read raised, in order.

        On PostgreSQL a group is ONE statement (:func:`group_task_statement`): a round
        trip and a statement's CPU for the group, not for each task. A missing task or a
        bad record is that task's outcome only. Should the grouped statement itself fail,
        the tasks are read one by one, so each request gets its own answer or error.
        Elsewhere (a local SQLite file) tasks are read one by one."""
        if self._group_sql is None or len(jeditaskids) < 2:
            return [outcome_of(self.inputs, i) for i in jeditaskids]
        try:
            rows = self.group_rows(jeditaskids)
        except DatabaseUnavailable as exc:
            log.warning("grouped read of %d tasks failed, reading them one by one: %s",
                        len(jeditaskids), exc)  # fmt: skip
            return [outcome_of(self.inputs, i) for i in jeditaskids]
        return [outcome_of(self._decoded, i, rows.get(int(i), [])) for i in jeditaskids]

    def _decoded(self, jeditaskid: int, rows: Sequence[tuple[Any, ...]]) -> TaskInputs:
        """One task's statement rows as :meth:`inputs` returns them."""
        if not rows:
            raise TaskNotFound(jeditaskid)
        task = dict(zip(self._task_keys, rows[0][: self._n_task], strict=True))
        try:
            params = parse_taskparams(task.pop("taskparams"))
        except (ValueError, TypeError) as exc:
            raise BadTaskRecord(f"task {jeditaskid}: jedi_taskparams.taskparams: {exc}") from exc
        datasets = [
            dict(zip(DATASET_COLUMNS_READ, row[self._datasets], strict=True))
            for row in rows
            if row[self._n_task] is not None  # no datasetid: the outer join's empty row
        ]
        return task, params, datasets

    def states(self, pairs: Iterable[tuple[str, str]]) -> dict[StateKey, KeyState]:
        """The store's rows of these (key kind, key value) pairs, in one statement (a posted
        batch's history); :class:`DatabaseUnavailable` when the store cannot be read."""
        try:
            with self.engine.connect() as conn:
                return read_states(conn, pairs)
        except (SQLAlchemyError, *self._driver_errors) as exc:
            raise DatabaseUnavailable(f"cannot read the history store: {exc}") from exc

    def history(
        self, records: Sequence[Mapping[str, Any]], layout: HistoryLayout, cfg: HistorySettings
    ) -> tuple[list[dict[str, float]], list[bool]]:
        """History features of posted tasks, as the task path computes them: one store read
        for the whole batch. ``records`` are feature dicts (the key features are named as
        their jedi_tasks columns) with ``creationdate`` (None: now)."""
        kinds = layout_keys(layout, TASK_HISTORY_KEYS)
        keyed = [
            {
                **{c: category_text(r.get(c)) for c in kinds.values()},
                "creationdate": r.get("creationdate"),
            }
            for r in records
        ]
        states = self.states(key_pairs(keyed, kinds))
        return records_history(states, keyed, layout, TASK_HISTORY_KEYS, cfg)

    def history_lookup(
        self, layout: HistoryLayout | None, cfg: HistorySettings
    ) -> Callable[[Sequence[Mapping[str, Any]]], tuple[list[dict[str, float]], list[bool]]] | None:
        """:meth:`history` for ``layout`` (None: the bundle uses no history or the database
        has no store); the service's POST path and the listener fill tasks with it."""
        if layout is None or not self.with_history:
            return None
        return functools.partial(self.history, layout=layout, cfg=cfg)

    def features(self, jeditaskid: int, table: Mapping[str, Domain]) -> dict[str, Any]:
        """One task's submission-time features, exactly as training computes them, checked
        against ``table`` (``features.domains``)."""
        return domain_checked(jeditaskid, features_of(*self.inputs(jeditaskid)), table)


def outcome_of(read: Callable[..., TaskInputs], *args: Any) -> TaskInputs | Exception:
    """A read's result, or the exception it raised (one task's failure, not its group's)."""
    try:
        return read(*args)
    except Exception as exc:
        return exc


def fetch_task_features(
    engine: Engine, jeditaskid: int, table: Mapping[str, Domain]
) -> dict[str, Any]:
    """One task's features (a one-off read; a service keeps one :class:`TaskReader`)."""
    return TaskReader(engine).features(jeditaskid, table)
