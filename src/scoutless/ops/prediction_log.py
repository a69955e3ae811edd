"""The durable prediction log: every prediction the service answers, one row per task.

A row holds the request, the task, the model version and policy, every served target's
decision (``predictions``: a JSON object, target -> class id, label, recommended value and
probabilities) and the task's features (drift monitoring). One row per task rather than
per task and target: a 1,000-task batch is 1,000 rows to bind and index, not 4,000, and the
log was most of a batch's cost. Readers get the long form the ops side joins with actuals
(:data:`LOG_COLUMNS`, one row per task and target, same target code) from
:meth:`PredictionLog.read`, which also reads rows of the earlier per-target table
(``scoutless_predictions``) where a database still has one. Rows are written and committed
*before* the service answers: a prediction answered is a prediction stored.

Concurrent requests are group-committed (:mod:`scoutless.ops.log_commit`), which keeps
the commit rate low under load without weakening the guarantee: each request waits for
the commit holding its rows.
On SQLite, the writers of several service workers take turns through a lock file
(:class:`WriterTurn`) rather than SQLite's busy handler, which sleeps 5-25 ms and retries.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal

import orjson
import pandas as pd
from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Engine,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    event,
    inspect,
    or_,
    select,
)
from sqlalchemy import Sequence as DbSequence
from sqlalchemy.exc import SQLAlchemyError

from scoutless.history.db_write import insert_few_postgres, insert_records
from scoutless.history.panda_db import DatabaseUnavailable, make_engine

TABLE_NAME = "scoutless_task_predictions"
#: the longest caller name kept (a JWT's subject is the issuer's to choose)
CALLER_CHARS = 128
#: where a row's features came from: the caller's request (``POSTED``: its own word, never
#: held against the task it names), or PanDA's database read by the task's id
POSTED, DATABASE = "posted", "database"
#: the per-(task, target) table of earlier versions: read, never written
LEGACY_TABLE_NAME = "scoutless_predictions"

log_metadata = MetaData()

predictions_table = Table(
    TABLE_NAME,
    log_metadata,
    # Oracle has no autoincrement without one: the sequence numbers ids there (optional:
    # SQLite and PostgreSQL keep their own, INTEGER PRIMARY KEY and SERIAL)
    Column(
        "id",
        Integer,
        DbSequence("scoutless_predictions_seq", optional=True),
        primary_key=True,
        autoincrement=True,
    ),
    Column("request_id", String(64), nullable=False),
    Column("jeditaskid", BigInteger, nullable=True),
    Column("model_version", String(128), nullable=False),
    Column("policy", String(16), nullable=False),
    # JSON object: target -> {"class_id", "class_label", "recommended_value", "probabilities"}
    Column("predictions", Text, nullable=False),
    Column("features", Text),  # JSON object: the task's feature dict (drift monitoring)
    Column("created_at", DateTime, nullable=False),  # UTC, naive
    # added later (ALTER TABLE on an older log): the risk bound the policy was asked for,
    # and the rollout arm the task was put in (ops/rollout.py) with the reason
    Column("alpha", Float),
    Column("arm", String(16)),
    Column("arm_reason", Text),
    # who asked (a token's name, a JWT's subject, "loopback") and where the features came
    # from: SOURCES (None in older rows: not known)
    Column("caller", String(CALLER_CHARS)),
    Column("source", String(16)),
    Index("scoutless_task_predictions_created_idx", "created_at"),
    Index("scoutless_task_predictions_task_idx", "jeditaskid"),
)

legacy_table = Table(
    LEGACY_TABLE_NAME,
    MetaData(),
    Column("id", Integer, primary_key=True),
    Column("request_id", String(64)),
    Column("jeditaskid", BigInteger),
    Column("model_version", String(128)),
    Column("target", String(32)),
    Column("class_id", Integer),
    Column("class_label", String(64)),
    Column("probabilities", Text),
    Column("recommended_value", Float),
    Column("policy", String(16)),
    Column("features", Text),
    Column("created_at", DateTime),
)

#: columns added to the per-task table after its first layout: nullable, added on start
ADDED_COLUMNS: tuple[str, ...] = ("alpha", "arm", "arm_reason", "caller", "source")
#: what each row says of the decision beside the targets' entries (None in older rows)
DECISION_COLUMNS: list[str] = ["alpha", "arm", "caller", "source"]
#: the long form :meth:`PredictionLog.read` returns: one row per task and target; the
#: task's features on its first target's row only (drift needs them once per task)
LOG_COLUMNS: list[str] = [c.name for c in legacy_table.columns] + DECISION_COLUMNS
#: what one target's entry of a row's ``predictions`` holds
TARGET_FIELDS: tuple[str, ...] = ("class_id", "class_label", "recommended_value", "probabilities")


#: on servers other than SQLite, from this many rows on writes go through COPY / the raw DBAPI
BULK_MIN_ROWS = 256


def _synchronous(level: str) -> Any:
    """A connect hook setting the log's SQLite ``synchronous`` level.

    NORMAL (the default) in WAL mode: a commit is in the WAL file when it returns, so a
    crash or SIGKILL of the service loses no answered prediction; a power loss or an OS
    crash may undo the commits since the WAL was last synced (at most the last
    checkpoint's worth, usually well under a second). FULL fsyncs the WAL on every commit,
    so an answer survives a power loss too, but each commit then waits for the disk, and
    every answer waits for its commit (``Settings.service.log_synchronous``;
    docs/how-to/serve.md)."""

    def hook(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute(f"PRAGMA synchronous={level}")
        cursor.close()

    return hook


def utcnow() -> datetime:
    """Naive UTC timestamp (portable across SQLite, PostgreSQL and Oracle)."""
    return datetime.now(UTC).replace(tzinfo=None)


class WriterTurn:
    """Writers of one SQLite file take turns through ``<file>.write-lock`` (flock).

    SQLite makes a writer that finds the file locked sleep (1, 2, 5 … 25 ms) and retry;
    two service workers committing the log at once then wait far longer than a commit
    takes. A blocking flock wakes the next writer as soon as the lock is released.
    """

    def __init__(self, database: str) -> None:
        self.path = f"{database}.write-lock"
        self._fd: int | None = None
        self._threads = threading.Lock()  # flock is per open file, not per thread

    @contextmanager
    def hold(self) -> Iterator[None]:
        with self._threads:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)


class PredictionLog:
    """Write and read the prediction log in any SQLAlchemy database."""

    def __init__(
        self,
        engine_or_url: Engine | str,
        *,
        create: bool = True,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
    ) -> None:
        self.engine = (
            make_engine(engine_or_url) if isinstance(engine_or_url, str) else engine_or_url
        )
        database = self.engine.url.database
        sqlite_file = self.engine.dialect.name == "sqlite" and database not in (
            None,
            "",
            ":memory:",
        )
        self._turn = WriterTurn(str(database)) if sqlite_file else None
        if sqlite_file and synchronous != "NORMAL":  # NORMAL: make_engine's own setting
            event.listen(self.engine, "connect", _synchronous(synchronous))
            self.engine.pool.dispose()  # connections opened before follow the rule too
        if create:
            self.create()

    def create(self) -> None:
        """Create the table unless it exists. Several service workers start at once on a
        fresh log: the loser of the check-then-create race finds the table made."""
        try:
            log_metadata.create_all(self.engine, tables=[predictions_table])
        except SQLAlchemyError as exc:
            if not self._has(TABLE_NAME):
                raise DatabaseUnavailable(
                    f"prediction log {self.engine.url!r}: cannot create {TABLE_NAME}: {exc}"
                ) from exc
        self._add_columns()

    def _add_columns(self) -> None:
        """Add the columns an older log lacks (nullable: its rows read as None)."""
        try:
            present = {c["name"] for c in inspect(self.engine).get_columns(TABLE_NAME)}
        except SQLAlchemyError:
            return
        for name in [c for c in ADDED_COLUMNS if c not in present]:
            kind = predictions_table.c[name].type.compile(dialect=self.engine.dialect)
            try:
                with self.engine.begin() as conn:
                    conn.exec_driver_sql(f"ALTER TABLE {TABLE_NAME} ADD COLUMN {name} {kind}")
            except SQLAlchemyError as exc:  # a concurrent starter added it first
                if name not in {c["name"] for c in inspect(self.engine).get_columns(TABLE_NAME)}:
                    raise DatabaseUnavailable(
                        f"prediction log {self.engine.url!r}: cannot add {name}: {exc}"
                    ) from exc

    def write(self, rows: Sequence[dict[str, Any]]) -> int:
        """Insert per-task rows in one committed transaction; returns the count.

        A row's ``predictions`` is the JSON text or the dict (target -> :data:`TARGET_FIELDS`).
        """
        if not rows:
            return 0
        now = utcnow()
        stamped = [_stamped(r, now) for r in rows]
        if self._turn is not None:
            with self._turn.hold():
                return self._insert(stamped)
        if len(stamped) >= BULK_MIN_ROWS:
            return self._insert(stamped)
        if self.engine.dialect.name == "postgresql":  # the service's group commits
            try:
                return insert_few_postgres(self.engine, predictions_table, stamped)
            except DatabaseUnavailable as exc:
                raise DatabaseUnavailable(f"prediction log {self.engine.url!r}: {exc}") from exc
        try:
            with self.engine.begin() as conn:
                conn.execute(predictions_table.insert(), stamped)
        except SQLAlchemyError as exc:
            raise DatabaseUnavailable(
                f"prediction log {self.engine.url!r}: cannot write {len(rows)} rows: {exc}"
            ) from exc
        return len(stamped)

    def _insert(self, stamped: list[dict[str, Any]]) -> int:
        """Raw executemany (SQLite) / COPY (other servers): several times faster."""
        try:
            return insert_records(self.engine, predictions_table, stamped)
        except DatabaseUnavailable as exc:
            raise DatabaseUnavailable(f"prediction log {self.engine.url!r}: {exc}") from exc

    def read(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        target: str | None = None,
        model_version: str | None = None,
    ) -> pd.DataFrame:
        """Logged predictions in the long form (:data:`LOG_COLUMNS`), oldest first, filtered;
        ``since``/``until`` are UTC. Rows of the earlier per-target table come first."""
        frames = [long_form(self._select(predictions_table, since, until, model_version), target)]
        if self._has(LEGACY_TABLE_NAME):
            legacy = self._select(legacy_table, since, until, model_version)
            frame = pd.DataFrame([dict(r) for r in legacy], columns=LOG_COLUMNS)  # no arm
            frames.insert(0, frame if target is None else frame[frame["target"] == target])
        frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        frame["created_at"] = pd.to_datetime(frame["created_at"])
        return frame

    def _select(
        self,
        t: Table,
        since: datetime | None,
        until: datetime | None,
        model_version: str | None,
    ) -> list[Mapping[str, Any]]:
        stmt = select(t).order_by(t.c.id)
        if since is not None:
            stmt = stmt.where(t.c.created_at >= _naive_utc(since))
        if until is not None:
            stmt = stmt.where(t.c.created_at < _naive_utc(until))
        if model_version is not None:
            stmt = stmt.where(t.c.model_version == model_version)
        try:
            with self.engine.connect() as conn:
                return list(conn.execute(stmt).mappings().fetchall())
        except SQLAlchemyError as exc:
            raise DatabaseUnavailable(f"prediction log {self.engine.url!r}: {exc}") from exc

    def _has(self, table_name: str) -> bool:
        """Whether the table exists (False when the database cannot say: the statement that
        follows then names the error)."""
        try:
            return inspect(self.engine).has_table(table_name)
        except SQLAlchemyError:
            return False

    def task_ids(self) -> list[int]:
        """Every task id logged with features from the database, each once, ascending (no
        JSON decoded: the collector calls this on the whole log)."""
        ids: set[int] = set()
        tables = [predictions_table] + ([legacy_table] if self._has(LEGACY_TABLE_NAME) else [])
        try:
            with self.engine.connect() as conn:
                for t in tables:
                    stmt = select(t.c.jeditaskid).where(t.c.jeditaskid.is_not(None)).distinct()
                    if t is predictions_table:  # posted features say nothing of the task
                        stmt = stmt.where(or_(t.c.source.is_(None), t.c.source != POSTED))
                    ids.update(int(i) for i in conn.execute(stmt).scalars())
        except SQLAlchemyError as exc:
            raise DatabaseUnavailable(f"prediction log {self.engine.url!r}: {exc}") from exc
        return sorted(ids)

    def count(self) -> int:
        """Logged tasks (rows of the per-task table)."""
        from sqlalchemy import func

        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(predictions_table)).scalar())


def _stamped(row: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The row with its creation time and its predictions as JSON text."""
    predictions = row.get("predictions")
    if row.get("created_at") and not isinstance(predictions, dict):
        return row
    out = {**row, "created_at": row.get("created_at") or now}
    if isinstance(predictions, dict):
        out["predictions"] = _json(predictions)
    return out


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY).decode()


def long_form(rows: Sequence[Mapping[str, Any]], target: str | None = None) -> pd.DataFrame:
    """Per-task rows (as written or read) -> the long form (:data:`LOG_COLUMNS`): one row per
    task and served target (``target`` only, when given); the features on each task's first
    row."""
    columns: dict[str, list[Any]] = {c: [] for c in LOG_COLUMNS}
    shared = ("id", "request_id", "jeditaskid", "model_version", "policy", "created_at",
              *DECISION_COLUMNS)  # fmt: skip
    for row in rows:
        predictions = row["predictions"]
        if isinstance(predictions, str):
            predictions = orjson.loads(predictions)
        first = True
        for name, entry in predictions.items():
            if target is not None and name != target:
                continue
            for c in shared:
                columns[c].append(row.get(c))
            columns["target"].append(name)
            for c in TARGET_FIELDS:  # probabilities as JSON text, as the per-target table had
                columns[c].append(_json(entry[c]) if c == "probabilities" else entry[c])
            if row.get("alpha") is None and entry.get("alpha") is not None:
                columns["alpha"][-1] = entry["alpha"]  # the service logs it per target
            columns["features"].append(row.get("features") if first else None)
            first = False
    return pd.DataFrame(columns, columns=LOG_COLUMNS)


def of_the_task(log: pd.DataFrame) -> pd.DataFrame:
    """The rows that speak for the task they name: not those whose features a caller posted
    (any ``predict`` token may post made-up features under a real task's id); what is
    held against a task's actuals, arm and outcome."""
    return log[log["source"] != POSTED] if "source" in log else log


def _naive_utc(ts: datetime) -> datetime:
    return ts.astimezone(UTC).replace(tzinfo=None) if ts.tzinfo else ts
