"""The online history-feature store: one table of per-key summaries, updated incrementally.

Each row is one key (``user`` = alice, ``app`` = Sim_tf.py …) with a
:class:`~scoutless.features.key_state.KeyState` per target (``""``: the key's activity) in
one JSON column: a served task joins three rows, not one per key and target (fifteen
joins and hundreds of columns per request's read). Import and ``monitor collect`` feed it
finished jobs/tasks in end-time order; the service reads the rows of a request's keys
(:func:`history_select`, one statement); ``history/store_reader.py`` turns them into the
same history features training computed. This module holds the table, its packed states,
the legacy layout's migration and the writer (:func:`update_store`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson
import pandas as pd
from sqlalchemy import (
    Column,
    Connection,
    DateTime,
    Engine,
    MetaData,
    PrimaryKeyConstraint,
    Select,
    String,
    Table,
    Text,
    delete,
    inspect,
    select,
    text,
    tuple_,
)
from sqlalchemy.exc import SQLAlchemyError

from scoutless.config import HistorySettings
from scoutless.features.history import seconds, with_derived_keys
from scoutless.features.key_state import KeyState
from scoutless.features.running_stats import EW_EMPTY

HISTORY_TABLE = "scoutless_history_keys"
#: The store's first layout, one row per key and target; a writer or a service that finds it
#: moves its rows into :data:`HISTORY_TABLE` (:func:`create_history_table`).
LEGACY_TABLE = "scoutless_history_state"
ACTIVITY = ""  # the target name of a key's activity state

store_metadata = MetaData()
key_states = Table(
    HISTORY_TABLE,
    store_metadata,
    Column("key_kind", String(16), nullable=False),
    Column("key_value", String(256), nullable=False),
    Column("states", Text, nullable=False),  # JSON: target ("" activity) -> packed state
    Column("updated_at", DateTime, nullable=False),
    PrimaryKeyConstraint("key_kind", "key_value", name="scoutless_history_keys_pk"),
)

StateKey = tuple[str, str, str]  # (key kind, key value, target)

#: The legacy table's state columns (the last six were added later: a table from before
#: them has none, and its keys' errors count from the next finished job).
LEGACY_COLUMNS: tuple[str, ...] = (
    "n", "last_end_s", "last_submit_s", "recent", "ew_s", "ew_s2", "ew_w",
    "ratio_s", "ratio_s2", "ratio_w",
    "l2err_s", "l2err_s2", "l2err_w", "rqerr_s", "rqerr_s2", "rqerr_w",
)  # fmt: skip


def create_history_table(engine: Engine) -> None:
    """Create the store unless it exists, and move a legacy table's rows into it."""
    try:
        store_metadata.create_all(engine, tables=[key_states])
    except SQLAlchemyError:  # another process created it meanwhile
        if not inspect(engine).has_table(HISTORY_TABLE):
            raise
    migrate_legacy(engine)


def migrate_legacy(engine: Engine) -> int:
    """Move the legacy table's rows (one per key and target) into one row per key, and
    drop it, in one transaction; returns the keys moved. Processes racing here (service
    workers starting at once) take turns: on a database server through a table lock
    (else two would each wait for the other, one on the new keys, one to drop the table),
    on SQLite through its write lock; the later ones find the table gone and move nothing."""
    if not inspect(engine).has_table(LEGACY_TABLE):
        return 0
    try:
        legacy = Table(LEGACY_TABLE, MetaData(), autoload_with=engine)
        columns = [c for c in LEGACY_COLUMNS if c in legacy.c]
        with engine.begin() as conn:
            if engine.dialect.name != "sqlite":  # PostgreSQL and Oracle alike
                conn.execute(text(f"LOCK TABLE {LEGACY_TABLE} IN EXCLUSIVE MODE"))
            rows = conn.execute(select(legacy.c.key_kind, legacy.c.key_value, legacy.c.target,
                                       *(legacy.c[c] for c in columns))).mappings().all()  # fmt: skip
            states = {(r["key_kind"], r["key_value"], r["target"]): _legacy_state(r) for r in rows}
            present = set(conn.execute(select(key_states.c.key_kind, key_states.c.key_value)))
            packed = _packed_rows(states, datetime.now(UTC).replace(tzinfo=None))
            fresh = [r for r in packed if (r["key_kind"], r["key_value"]) not in present]
            if fresh:
                conn.execute(key_states.insert(), fresh)
            legacy.drop(conn)
    except SQLAlchemyError:
        if inspect(engine).has_table(LEGACY_TABLE):
            raise
        return 0  # moved by another process
    return len(fresh)


def _nan(value: Any) -> float:
    return float("nan") if value is None else float(value)


NAN3 = (float("nan"),) * 3


def _floats(values: Sequence[Any] | None) -> tuple[float, float, float]:
    """Three numbers, NULL (or absent) as NaN; the common case without NULL first (a served
    task unpacks ~15 states)."""
    if values is None:
        return NAN3
    if None in values:
        return _nan(values[0]), _nan(values[1]), _nan(values[2])
    return float(values[0]), float(values[1]), float(values[2])


def _ew(sums: Sequence[Any] | None) -> tuple[float, float, float]:
    """Weighted sums (absent or any NULL, an older state: none yet)."""
    return EW_EMPTY if sums is None or None in sums else _floats(sums)


def _legacy_state(row: Mapping[str, Any]) -> KeyState:
    def sums(prefix: str) -> list[Any]:
        return [row.get(f"{prefix}_{part}") for part in ("s", "s2", "w")]

    return KeyState(
        n=int(row["n"]), last_end_s=_nan(row["last_end_s"]),
        last_submit_s=_nan(row["last_submit_s"]), recent=list(orjson.loads(row["recent"])),
        ew=_floats(sums("ew")), ratio_ew=_floats(sums("ratio")),
        last2_err_ew=_ew(sums("l2err")), request_err_ew=_ew(sums("rqerr")),
    )  # fmt: skip


def pack_state(state: KeyState) -> dict[str, Any]:
    """One target's state as JSON-ready values (NaN and inf: null)."""
    return {
        "n": state.n, "end": state.last_end_s, "submit": state.last_submit_s,
        "recent": state.recent, "ew": state.ew, "ratio": state.ratio_ew,
        "l2err": state.last2_err_ew, "rqerr": state.request_err_ew,
    }  # fmt: skip


def unpack_state(packed: Mapping[str, Any]) -> KeyState:
    """The inverse of :func:`pack_state`; a field a later version adds is absent from an
    earlier row and starts empty."""
    return KeyState(
        n=int(packed["n"]), last_end_s=_nan(packed.get("end")),
        last_submit_s=_nan(packed.get("submit")), recent=packed.get("recent") or [],
        ew=_floats(packed.get("ew")), ratio_ew=_floats(packed.get("ratio")),
        last2_err_ew=_ew(packed.get("l2err")), request_err_ew=_ew(packed.get("rqerr")),
    )  # fmt: skip


def states_of_key(kind: str, value: str, packed: str) -> dict[StateKey, KeyState]:
    """One store row's states, by (key kind, key value, target)."""
    return {(kind, value, t): unpack_state(p) for t, p in orjson.loads(packed).items()}


def _packed_rows(states: Mapping[StateKey, KeyState], now: datetime) -> list[dict[str, Any]]:
    """One row per key of ``states``, all of its targets' states in one JSON object."""
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for (kind, value, target), state in states.items():
        by_key.setdefault((kind, value), {})[target] = pack_state(state)
    return [
        {"key_kind": kind, "key_value": value, "updated_at": now,
         "states": orjson.dumps(packed, option=orjson.OPT_SERIALIZE_NUMPY).decode()}
        for (kind, value), packed in by_key.items()
    ]  # fmt: skip


def history_select(pairs: Iterable[tuple[str, str]]) -> Select:
    """One statement for the store rows of these (key kind, key value) pairs."""
    selected = select(key_states.c.key_kind, key_states.c.key_value, key_states.c.states)
    wanted = sorted(set(pairs))
    if not wanted:
        return selected.where(key_states.c.key_kind.is_(None))
    return selected.where(tuple_(key_states.c.key_kind, key_states.c.key_value).in_(wanted))


def read_states(conn: Connection, pairs: Iterable[tuple[str, str]]) -> dict[StateKey, KeyState]:
    states: dict[StateKey, KeyState] = {}
    for kind, value, packed in conn.execute(history_select(pairs)):
        states.update(states_of_key(kind, value, packed))
    return states


def _key_values(frame: pd.DataFrame, column: str) -> list[str | None]:
    return [None if pd.isna(v) else str(v) for v in frame[column].tolist()]


def apply_jobs(
    states: dict[StateKey, KeyState],
    jobs: pd.DataFrame,
    keys: Mapping[str, str],
    targets: Sequence[str],
    cfg: HistorySettings,
) -> None:
    """Feed ``jobs`` (``creationdate``, ``finished_at``, ``{t}_value``, ``{t}_request``) in."""
    jobs = with_derived_keys(jobs, keys)
    submit = seconds(jobs["creationdate"])
    end = seconds(jobs["finished_at"]) if "finished_at" in jobs else np.full(len(jobs), np.nan)
    order = np.lexsort((np.arange(len(jobs)), end))  # end-time order, unfinished last
    values = {t: jobs[f"{t}_value"].to_numpy(float) for t in targets if f"{t}_value" in jobs}
    requests = {t: jobs[f"{t}_request"].to_numpy(float) for t in targets if f"{t}_request" in jobs}
    for kind, column in keys.items():
        groups = _key_values(jobs, column)
        for i in order:
            if groups[i] is None:
                continue
            activity = states.setdefault((kind, groups[i], ACTIVITY), KeyState())
            activity.submitted(submit[i])
            if not np.isfinite(end[i]):
                continue
            activity.add(float("nan"), end[i], float("nan"), cfg)
            for t, v in values.items():
                if np.isfinite(v[i]):
                    req = requests[t][i] if t in requests else float("nan")
                    states.setdefault((kind, groups[i], t), KeyState()).add(v[i], end[i], req, cfg)


def update_store(
    engine: Engine,
    jobs: pd.DataFrame,
    keys: Mapping[str, str],
    targets: Sequence[str],
    cfg: HistorySettings,
) -> int:
    """Apply newly finished (and submitted) jobs to their keys' rows in one transaction;
    returns the key rows written."""
    create_history_table(engine)
    jobs = with_derived_keys(jobs, keys)
    pairs = {(k, v) for k, c in keys.items() for v in _key_values(jobs, c) if v is not None}
    with engine.begin() as conn:
        states = read_states(conn, pairs)
        apply_jobs(states, jobs, keys, targets, cfg)
        changed = {key: state for key, state in states.items() if (key[0], key[1]) in pairs}
        if not changed:
            return 0
        for kind in {k[0] for k in changed}:
            values = sorted({k[1] for k in changed if k[0] == kind})
            for start in range(0, len(values), 500):
                conn.execute(delete(key_states).where(
                    key_states.c.key_kind == kind,
                    key_states.c.key_value.in_(values[start : start + 500]),
                ))  # fmt: skip
        rows = _packed_rows(changed, datetime.now(UTC).replace(tzinfo=None))
        conn.execute(key_states.insert(), rows)
    return len(rows)


#: What the service flags on a task whose keys have no finished job in the store.
HISTORY_MISSING = "history_missing"
