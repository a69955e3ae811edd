"""The rollout: which eligible tasks skip their scouts, held as a row the listener re-reads.

Three modes (docs/how-to/rollout.md):

* ``shadow``: predict, log, publish with ``skip_scout: false``; the scouts run;
* ``canary``: of the eligible tasks in scope (gshare / workqueue / processing type), a
  share P skips its scouts (arm ``canary``), the rest keep them (arm ``control``); a task's
  arm is a pure function of (seed, its stable key): ``jediTaskID``, or the task name for
  task parameters before submission — the same on a restart and in any message order;
* ``full``: every eligible task skips its scouts.

The state is append-only (``scoutless_rollout``: one row per change, the last one holds),
so who changed what, when and why stays on record, and a person (``scoutless rollout set``)
or the guard rail switches it without restarting anything. Tasks already skipped stay as
they are; :func:`already_skipped` says which.

Safe by default: no row (or no table) means ``shadow``. Every change is a compare-and-swap
on the version (the row id) its author read: it is written only while that version is the
last row (equality: a version older or ahead of it is refused), the new row takes id
``version + 1``, so of two changes made from the same reading one fails on the primary
key (:class:`RolloutConflict`, naming the change in force). Reasons and authors are stored as plain text on one line. The modes, the
arms and a task's draw are ``allocation/arms.py``'s (pure: the replay's canary shares them).
"""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Mapping
from typing import Any

from sqlalchemy import (
    Column,
    DateTime,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    func,
    inspect,
    select,
)
from sqlalchemy import Sequence as DbSequence
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from scoutless.allocation.arms import SKIPPING_ARMS, RolloutError, RolloutState, check_state
from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.ops.prediction_log import utcnow

ROLLOUT_TABLE = "scoutless_rollout"
#: the longest reason kept (one line)
MAX_REASON_CHARS = 500

rollout_metadata = MetaData()

rollout_table = Table(
    ROLLOUT_TABLE,
    rollout_metadata,
    # Oracle numbers ids only through a sequence (optional: SQLite and PostgreSQL keep theirs)
    Column(
        "id",
        Integer,
        DbSequence("scoutless_rollout_seq", optional=True),
        primary_key=True,
        autoincrement=True,
    ),
    Column("mode", String(16), nullable=False),
    Column("share", Float),  # canary only
    Column("seed", Integer, nullable=False),
    Column("scope", Text),  # JSON object: scope key -> allowed values; NULL: every task
    Column("reason", Text),
    Column("changed_by", String(64), nullable=False),
    Column("changed_at", DateTime, nullable=False),  # UTC, naive
)


class RolloutConflict(RolloutError):
    """The rollout changed since it was read: the change was not written."""

    def __init__(self, expected: int, current: RolloutState) -> None:
        self.expected, self.current = expected, current
        in_force = (
            f"version {current.version} is {current.describe()} "
            f"(by {current.changed_by}: {current.reason or '-'})"
        )
        if expected > current.version:  # a mistyped --if-version, not a race
            super().__init__(
                f"the rollout has no version {expected} yet: {in_force}; nothing written, "
                "give the version rollout show prints"
            )
            return
        super().__init__(
            f"the rollout changed since version {expected} was read: {in_force}; "
            "nothing written, read it again"
        )


def default_state() -> RolloutState:
    """The state before any decision (no row, or no table): shadow, nothing skips (a
    shadow draws no arms, so it holds no seed of its own)."""
    return RolloutState("shadow", None, reason="no rollout decision yet: shadow")


def plain_text(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` as one line of plain characters (control characters and newlines become
    spaces), cut at ``limit``; markup is escaped where it is shown."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in str(text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def os_identity() -> str:
    """Who runs this process, by the account (not ``$LOGNAME``, which anyone can set),
    marked as an operating-system identity: ``os:alice``."""
    uid = os.getuid()
    try:
        return f"os:{pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"os:uid-{uid}"


def create_rollout_table(engine: Engine) -> None:
    try:
        rollout_metadata.create_all(engine, tables=[rollout_table])
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot create {ROLLOUT_TABLE}: {exc}") from exc


def read_rollout(engine: Engine) -> RolloutState:
    """The state in force: the last row, or the configured default when there is none."""
    t = rollout_table
    try:
        with engine.connect() as conn:
            row = conn.execute(select(t).order_by(t.c.id.desc()).limit(1)).mappings().first()
    except SQLAlchemyError as exc:
        create_rollout_table(engine)  # a database without the table yet: the default holds
        try:
            with engine.connect() as conn:
                row = conn.execute(select(t).order_by(t.c.id.desc()).limit(1)).mappings().first()
        except SQLAlchemyError:
            raise DatabaseUnavailable(f"cannot read {ROLLOUT_TABLE}: {exc}") from exc
    return default_state() if row is None else _state(row)


def peek_mode(engine: Engine) -> str | None:
    """The mode in force, creating nothing: None where the database has no rollout row
    (the JEDI plugin's database may not hold the listener's tables, nor allow CREATE)."""
    t = rollout_table
    try:
        with engine.connect() as conn:
            return conn.execute(select(t.c.mode).order_by(t.c.id.desc()).limit(1)).scalar()
    except SQLAlchemyError:
        return None


def _state(row: Mapping[str, Any]) -> RolloutState:
    return RolloutState(
        mode=row["mode"], share=row["share"], seed=int(row["seed"]),
        scope=json.loads(row["scope"]) if row["scope"] else {}, reason=row["reason"] or "",
        changed_by=row["changed_by"], changed_at=row["changed_at"], version=int(row["id"]),
    )  # fmt: skip


def history(engine: Engine) -> list[RolloutState]:
    """Every change, oldest first."""
    create_rollout_table(engine)
    with engine.connect() as conn:
        rows = conn.execute(select(rollout_table).order_by(rollout_table.c.id)).mappings().all()
    return [_state(r) for r in rows]


def set_rollout(
    engine: Engine,
    mode: str,
    *,
    share: float | None = None,
    seed: int,
    scope: Mapping[str, list[str]] | None = None,
    reason: str = "",
    changed_by: str | None = None,
    expected_version: int | None = None,
) -> RolloutState:
    """Append a change (validated first: a bad one writes nothing) and return it.

    ``seed``: the canary's assignment seed (the command line's default is ``rollout.seed``).

    ``changed_by``: the authenticated identity making the change; None: this process's
    operating-system account (:func:`os_identity`).

    ``expected_version``: the version the change was decided on (``RolloutState.version``,
    0 for no row); the change is written only while it is still the last one, else
    :class:`RolloutConflict`. None: the version in force as this call reads it."""
    scope = {k: [str(v) for v in values] for k, values in (scope or {}).items()}
    check_state(mode, share, scope)
    row = {
        "mode": mode, "share": share,
        "seed": int(seed),
        "scope": json.dumps(scope, sort_keys=True) if scope else None,
        "reason": plain_text(reason), "changed_by": plain_text(changed_by or os_identity(), 64),
        "changed_at": utcnow(),
    }  # fmt: skip
    create_rollout_table(engine)
    if expected_version is None:
        expected_version = read_rollout(engine).version
    new_id = int(expected_version) + 1
    last_id = select(func.max(rollout_table.c.id))
    try:
        with engine.begin() as conn:
            if (conn.execute(last_id).scalar() or 0) != expected_version:  # older or ahead
                raise _Stale()
            conn.execute(rollout_table.insert(), {**row, "id": new_id})
            if conn.execute(last_id).scalar() != new_id:  # a row written meanwhile
                raise _Stale()
    except (IntegrityError, _Stale):
        raise RolloutConflict(int(expected_version), read_rollout(engine)) from None
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot write {ROLLOUT_TABLE}: {exc}") from exc
    return _state({**row, "id": new_id})


class _Stale(Exception):
    """Rolls the compare-and-swap's transaction back."""


def already_skipped(engine: Engine) -> list[int]:
    """Tasks whose logged prediction skipped their scouts (arm canary or full): they stay so
    whatever the mode becomes."""
    from scoutless.ops.prediction_log import predictions_table as t

    if not inspect(engine).has_table(t.name):
        return []
    stmt = select(t.c.jeditaskid).where(t.c.arm.in_(sorted(SKIPPING_ARMS))).distinct()
    try:
        with engine.connect() as conn:
            return sorted(int(i) for i in conn.execute(stmt).scalars() if i is not None)
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot read the prediction log's arms: {exc}") from exc
