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
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
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
    inspect,
    select,
)
from sqlalchemy.exc import SQLAlchemyError

from scoutless.config import get_settings
from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.ops.prediction_log import utcnow

ROLLOUT_TABLE = "scoutless_rollout"
MODES = ("shadow", "canary", "full")
#: the task attributes a canary may be scoped by (jedi_tasks' names)
SCOPE_KEYS = ("gshare", "workqueue_id", "processingtype")
#: arms a task can be in; only ``canary`` and ``full`` skip scouts
ARMS = ("shadow", "canary", "control", "full", "ineligible", "out_of_scope")
SKIPPING_ARMS = frozenset({"canary", "full"})

rollout_metadata = MetaData()

rollout_table = Table(
    ROLLOUT_TABLE,
    rollout_metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("mode", String(16), nullable=False),
    Column("share", Float),  # canary only
    Column("seed", Integer, nullable=False),
    Column("scope", Text),  # JSON object: scope key -> allowed values; NULL: every task
    Column("reason", Text),
    Column("changed_by", String(64), nullable=False),
    Column("changed_at", DateTime, nullable=False),  # UTC, naive
)


class RolloutError(ValueError):
    """A rollout setting that cannot hold (names the key)."""


@dataclass(frozen=True)
class RolloutState:
    mode: str
    share: float | None = None
    seed: int = 0
    scope: dict[str, list[str]] = field(default_factory=dict)
    reason: str = ""
    changed_by: str = "default"
    changed_at: datetime | None = None
    version: int = 0  # the row's id; 0: no row yet (the configured default)

    def __post_init__(self) -> None:
        check_state(self.mode, self.share, self.scope)

    def describe(self) -> str:
        text = self.mode
        if self.mode == "canary":
            text += f" share {self.share:g} seed {self.seed}"
        if self.scope:
            text += " scope " + ", ".join(f"{k}={'|'.join(v)}" for k, v in self.scope.items())
        return text


def check_state(mode: str, share: float | None, scope: Mapping[str, Any]) -> None:
    """Raise :class:`RolloutError` naming the key that is wrong."""
    if mode not in MODES:
        raise RolloutError(f"rollout.mode: unknown mode {mode!r}; expected one of {list(MODES)}")
    if mode == "canary":
        if share is None or not math.isfinite(share) or not 0 < share <= 1:
            raise RolloutError(f"rollout.share: must be in (0, 1], got {share!r}")
    elif share is not None:
        raise RolloutError(f"rollout.share: only a canary has a share (mode {mode!r})")
    unknown = sorted(set(scope) - set(SCOPE_KEYS))
    if unknown:
        raise RolloutError(f"rollout.scope: unknown keys {unknown}; expected {list(SCOPE_KEYS)}")
    for key, values in scope.items():
        if not isinstance(values, list | tuple) or not values:
            raise RolloutError(f"rollout.scope.{key}: expected a non-empty list of values")


def default_state() -> RolloutState:
    s = get_settings().rollout
    share = 1.0 if s.default_mode == "canary" else None
    return RolloutState(s.default_mode, share, s.seed, reason="configured default")


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
    seed: int | None = None,
    scope: Mapping[str, list[str]] | None = None,
    reason: str = "",
    changed_by: str = "operator",
) -> RolloutState:
    """Append a change (validated first: a bad one writes nothing) and return it."""
    scope = {k: [str(v) for v in values] for k, values in (scope or {}).items()}
    check_state(mode, share, scope)
    row = {
        "mode": mode, "share": share,
        "seed": get_settings().rollout.seed if seed is None else int(seed),
        "scope": json.dumps(scope, sort_keys=True) if scope else None, "reason": reason,
        "changed_by": changed_by[:64], "changed_at": utcnow(),
    }  # fmt: skip
    create_rollout_table(engine)
    try:
        with engine.begin() as conn:
            new_id = conn.execute(rollout_table.insert(), row).inserted_primary_key[0]
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"cannot write {ROLLOUT_TABLE}: {exc}") from exc
    return _state({**row, "id": new_id})


# -- assignment ---------------------------------------------------------------------------
def unit_draw(seed: int, key: str) -> float:
    """A uniform number in [0, 1) from (seed, key): SHA-256, not Python's salted hash, so
    every process and every restart draws the same number for a task."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


@dataclass(frozen=True)
class Assignment:
    arm: str
    skip_scout: bool
    reason: str


def in_scope(scope: Mapping[str, list[str]], task: Mapping[str, Any]) -> str | None:
    """None when the task is in scope, else which key keeps it out."""
    for key, allowed in scope.items():
        value = task.get(key)
        if str(value) not in allowed:
            return f"{key}={value!r} not in {allowed}"
    return None


def assign(
    state: RolloutState, key: str, eligible: bool, task: Mapping[str, Any] | None = None
) -> Assignment:
    """The arm of one task, with the reason logged beside it."""
    if state.mode == "shadow":
        would = "eligible" if eligible else "not eligible"
        return Assignment("shadow", False, f"shadow: scouts run ({would} to skip)")
    if not eligible:
        return Assignment("ineligible", False, "the allocation keeps the scouts")
    outside = in_scope(state.scope, task or {})
    if outside is not None:
        return Assignment("out_of_scope", False, f"out of the {state.mode} scope: {outside}")
    if state.mode == "full":
        return Assignment("full", True, "full rollout")
    u = unit_draw(state.seed, key)
    share = float(state.share or 0.0)
    if u < share:
        return Assignment("canary", True, f"canary: draw {u:.4f} < share {share:g}")
    return Assignment("control", False, f"control: draw {u:.4f} >= share {share:g}")


def task_key(task_id: int | None, task_name: str | None) -> str:
    """The stable key: the JEDI task id, or the task name before submission."""
    if task_id:
        return str(int(task_id))
    if task_name:
        return f"name:{task_name}"
    raise RolloutError("task: neither jediTaskID nor taskName given; no stable canary key")


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
