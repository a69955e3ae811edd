"""Which scout predictions were committed and published: the listener's idempotency key.

One row per (task, model version), committed in the same transaction as the task's
prediction-log rows and holding the exact message, so a redelivered ``defined`` message
is either a duplicate (published: ack it) or a message to publish again (committed, not
yet confirmed by the broker: the listener died or the broker went away in between).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Engine,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    select,
    update,
)
from sqlalchemy.exc import SQLAlchemyError

from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.ops.prediction_log import predictions_table, utcnow

outbox_metadata = MetaData()

outbox_table = Table(
    "scoutless_panda_outbox",
    outbox_metadata,
    Column("jeditaskid", BigInteger, nullable=False),
    Column("model_version", String(128), nullable=False),
    Column("message", Text, nullable=False),  # the scout_prediction JSON, as published
    Column("created_at", DateTime, nullable=False),  # UTC, naive
    Column("published_at", DateTime),  # NULL until the broker confirmed it
    PrimaryKeyConstraint("jeditaskid", "model_version"),
)


@dataclass(frozen=True)
class Entry:
    message: str
    published: bool


def create_outbox(engine: Engine) -> None:
    try:
        outbox_metadata.create_all(engine, tables=[outbox_table])
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot create {outbox_table.name}: {exc}") from exc


def entries(engine: Engine, task_ids: Sequence[int], model_version: str) -> dict[int, Entry]:
    """What is already recorded for these tasks under this model version."""
    t = outbox_table
    stmt = select(t.c.jeditaskid, t.c.message, t.c.published_at).where(
        t.c.model_version == model_version, t.c.jeditaskid.in_([int(i) for i in task_ids])
    )
    try:
        with engine.connect() as conn:
            rows = conn.execute(stmt).all()
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot read {t.name}: {exc}") from exc
    return {int(r.jeditaskid): Entry(r.message, r.published_at is not None) for r in rows}


def record(
    engine: Engine, log_rows: list[dict[str, Any]], messages: dict[int, str], model_version: str
) -> None:
    """Prediction-log rows and outbox rows in one committed transaction."""
    now = utcnow()
    stamped = [r if r.get("created_at") else {**r, "created_at": now} for r in log_rows]
    outbox_rows = [
        {"jeditaskid": tid, "model_version": model_version, "message": msg, "created_at": now}
        for tid, msg in messages.items()
    ]
    try:
        with engine.begin() as conn:
            if stamped:
                conn.execute(predictions_table.insert(), stamped)
            conn.execute(outbox_table.insert(), outbox_rows)
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot record {len(messages)} predictions: {exc}") from exc


def mark_published(
    engine: Engine, task_ids: Sequence[int], model_version: str, when: datetime | None = None
) -> None:
    t = outbox_table
    stmt = (
        update(t)
        .where(t.c.model_version == model_version, t.c.jeditaskid.in_([int(i) for i in task_ids]))
        .values(published_at=when or utcnow())
    )
    try:
        with engine.begin() as conn:
            conn.execute(stmt)
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(
            f"cannot mark {len(task_ids)} predictions published: {exc}"
        ) from exc
