"""Messages the listener could not process, kept with their reason instead of looping.

A ``task_status`` message goes here when it cannot be parsed (at once: it would fail the
same way every time) or when processing it failed ``Settings.listener.dead_letter_after``
times for a reason that is the message's, not an outage's. The row is committed, the body
is published to the broker's dead-letter destination where one is configured, then the
message is acked: it never comes back into the loop. ``scoutless dead-letters`` lists them.

A message that kills the listener raises nothing to count: its redeliveries are counted in
``scoutless_listener_deliveries`` (:func:`count_delivery`, committed before it is
processed), so it reaches the dead letter too instead of a crash at every restart.

:func:`data_fault` tells the two kinds of database error apart: a value the database
refuses (PostgreSQL SQLSTATE class 22 "data exception" such as ``bigint out of range``,
class 23 "integrity constraint violation", SQLAlchemy's ``DataError``/``IntegrityError``,
SQLite's ``OverflowError`` for an integer beyond int64) is the data's fault and is never
taken for an outage; anything else from the database is (retried with backoff).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    func,
    select,
    update,
)
from sqlalchemy import Sequence as DbSequence
from sqlalchemy.exc import DataError, IntegrityError, SQLAlchemyError

from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.jedi.messages import INT64_MAX
from scoutless.ops.prediction_log import utcnow

DEAD_LETTER_TABLE = "scoutless_dead_letters"
#: kinds of dead letter: unparseable at the door, or failed ``dead_letter_after`` times
KINDS = ("malformed", "failed")
MAX_BODY_CHARS = 65_536
MAX_REASON_CHARS = 2_000

dead_letter_metadata = MetaData()

dead_letter_table = Table(
    DEAD_LETTER_TABLE,
    dead_letter_metadata,
    # Oracle numbers ids only through a sequence (optional: SQLite and PostgreSQL keep theirs)
    Column(
        "id",
        Integer,
        DbSequence("scoutless_dead_letters_seq", optional=True),
        primary_key=True,
        autoincrement=True,
    ),
    Column("received_at", DateTime, nullable=False),  # UTC, naive
    Column("kind", String(16), nullable=False),  # malformed | failed
    Column("reason", Text, nullable=False),  # one line
    Column("attempts", Integer, nullable=False),
    Column("jeditaskid", BigInteger),  # when the message named a valid one
    Column("message_id", String(256)),  # the broker's message-id header
    Column("destination", String(256)),  # where it came from
    Column("body", Text, nullable=False),  # as received, cut at MAX_BODY_CHARS
)


#: redeliveries of a message not answered yet, by its body's SHA-256 (a listener that
#: died on a message cannot count it in memory)
deliveries_table = Table(
    "scoutless_listener_deliveries",
    dead_letter_metadata,
    Column("digest", String(64), primary_key=True),
    Column("deliveries", Integer, nullable=False),
    Column("last_at", DateTime, nullable=False),  # UTC, naive
)


@dataclass(frozen=True)
class DeadLetter:
    id: int
    received_at: datetime
    kind: str
    reason: str
    attempts: int
    jeditaskid: int | None
    message_id: str | None
    destination: str | None
    body: str


def one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` on one line (control characters and newlines as spaces), cut at ``limit``."""
    flat = "".join(c if c.isprintable() else " " for c in str(text))
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def data_fault(exc: BaseException) -> bool:
    """Whether the error is the data's fault (a value refused), not the database's."""
    for cause in _causes(exc):
        if isinstance(cause, DataError | IntegrityError | OverflowError):
            return True
        sqlstate = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
        if isinstance(sqlstate, str) and sqlstate[:2] in ("22", "23"):
            return True
    return False


def outage(exc: BaseException) -> bool:
    """A database error that is not the data's fault: retry the batch later."""
    return isinstance(exc, DatabaseUnavailable | SQLAlchemyError) and not data_fault(exc)


def create_dead_letter_table(engine: Engine) -> None:
    try:
        dead_letter_metadata.create_all(engine, tables=[dead_letter_table, deliveries_table])
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot create {DEAD_LETTER_TABLE}: {exc}") from exc


def count_delivery(engine: Engine, digest: str) -> int:
    """One more redelivery of the message ``digest``, committed; how many so far."""
    t = deliveries_table
    try:
        with engine.begin() as conn:
            bumped = conn.execute(
                update(t).where(t.c.digest == digest)
                .values(deliveries=t.c.deliveries + 1, last_at=utcnow())
            ).rowcount  # fmt: skip
            if not bumped:
                conn.execute(t.insert(), {"digest": digest, "deliveries": 1, "last_at": utcnow()})
            return int(conn.execute(select(t.c.deliveries).where(t.c.digest == digest)).scalar())
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot count a delivery in {t.name}: {exc}") from exc


def clear_deliveries(engine: Engine, digests: list[str]) -> None:
    """Forget the redeliveries of messages now answered (or dead-lettered)."""
    t = deliveries_table
    try:
        with engine.begin() as conn:
            conn.execute(delete(t).where(t.c.digest.in_(digests)))
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot clear {t.name}: {exc}") from exc


def record(
    engine: Engine,
    *,
    kind: str,
    reason: str,
    body: str,
    attempts: int,
    jeditaskid: int | None = None,
    message_id: str | None = None,
    destination: str | None = None,
) -> None:
    """Commit one dead letter; raises DatabaseUnavailable when the database cannot."""
    if kind not in KINDS:
        raise ValueError(f"dead letter kind {kind!r}: expected one of {KINDS}")
    row = {
        "received_at": utcnow(), "kind": kind, "reason": one_line(reason), "attempts": attempts,
        "jeditaskid": jeditaskid if jeditaskid is not None and 0 <= jeditaskid <= INT64_MAX
        else None, "message_id": (message_id or "")[:256] or None,
        "destination": (destination or "")[:256] or None,
        # PostgreSQL's text holds no NUL character
        "body": str(body)[:MAX_BODY_CHARS].replace("\x00", "\\u0000"),
    }  # fmt: skip
    try:
        with engine.begin() as conn:
            conn.execute(dead_letter_table.insert(), row)
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot write {DEAD_LETTER_TABLE}: {exc}") from exc


def counts(engine: Engine) -> dict[str, int]:
    """Dead letters stored, by kind (an empty dict where the table does not exist yet)."""
    t = dead_letter_table
    stmt = select(t.c.kind, func.count()).group_by(t.c.kind)
    try:
        with engine.connect() as conn:
            return {str(kind): int(n) for kind, n in conn.execute(stmt).all()}
    except SQLAlchemyError:
        create_dead_letter_table(engine)
        return {}


def recent(engine: Engine, limit: int = 20) -> list[DeadLetter]:
    """The last ``limit`` dead letters, newest first."""
    t = dead_letter_table
    stmt = select(t).order_by(t.c.id.desc()).limit(limit)
    create_dead_letter_table(engine)
    try:
        with engine.connect() as conn:
            rows: list[Any] = conn.execute(stmt).mappings().all()
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot read {DEAD_LETTER_TABLE}: {exc}") from exc
    return [DeadLetter(**dict(r)) for r in rows]
