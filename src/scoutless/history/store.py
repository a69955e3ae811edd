"""The online history-feature store: one table of per-key summaries, updated incrementally.

Each row is a :class:`~scoutless.features.history.KeyState` — one key (``user`` = alice,
``app`` = Sim_tf.py …) and one target (``""``: the key's activity). Import and ``monitor
collect`` feed it finished jobs/tasks in end-time order; the service reads the rows of a
request's keys (:func:`history_select`, one statement) and turns them into the same
history features training computed (:func:`features_from_states`).
"""

from __future__ import annotations

import functools
import json
import re
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
    Float,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Select,
    String,
    Table,
    Text,
    delete,
    inspect,
    literal_column,
    or_,
    select,
    text,
    tuple_,
)

from scoutless.config import HistorySettings, get_settings
from scoutless.features.history import (
    EW_EMPTY,
    HistoryLayout,
    KeyState,
    feature_name,
    seconds,
    target_stats,
    with_derived_keys,
)

HISTORY_TABLE = "scoutless_history_state"
ACTIVITY = ""  # the target name of a key's activity row

store_metadata = MetaData()
history_state = Table(
    HISTORY_TABLE,
    store_metadata,
    Column("key_kind", String(16), nullable=False),
    Column("key_value", String(256), nullable=False),
    Column("target", String(32), nullable=False),
    Column("n", Integer, nullable=False),
    Column("last_end_s", Float),
    Column("last_submit_s", Float),
    Column("recent", Text, nullable=False),  # JSON list, end-time order
    Column("ew_s", Float), Column("ew_s2", Float), Column("ew_w", Float),
    Column("ratio_s", Float), Column("ratio_s2", Float), Column("ratio_w", Float),
    Column("l2err_s", Float), Column("l2err_s2", Float), Column("l2err_w", Float),
    Column("rqerr_s", Float), Column("rqerr_s2", Float), Column("rqerr_w", Float),
    Column("updated_at", DateTime, nullable=False),
    PrimaryKeyConstraint("key_kind", "key_value", "target", name="scoutless_history_pk"),
)  # fmt: skip

StateKey = tuple[str, str, str]  # (key kind, key value, target)


#: Columns added after the first store (the experts' recent errors): a table created
#: before them gains them empty, and its keys' errors count from the next finished job.
ADDED_COLUMNS: tuple[str, ...] = (
    "l2err_s", "l2err_s2", "l2err_w", "rqerr_s", "rqerr_s2", "rqerr_w",
)  # fmt: skip


def create_history_table(engine: Engine) -> None:
    store_metadata.create_all(engine, tables=[history_state])
    present = {c["name"] for c in inspect(engine).get_columns(HISTORY_TABLE)}
    missing = [c for c in ADDED_COLUMNS if c not in present]
    if missing:
        with engine.begin() as conn:
            for column in missing:
                conn.execute(text(f"ALTER TABLE {HISTORY_TABLE} ADD COLUMN {column} FLOAT"))


def _nan(value: Any) -> float:
    return float("nan") if value is None else float(value)


def _ew(row: Mapping[str, Any], prefix: str) -> tuple[float, float, float]:
    """Weighted sums from their three columns (absent or NULL, an older row: none yet)."""
    sums = [row.get(f"{prefix}_{part}") for part in ("s", "s2", "w")]
    return EW_EMPTY if any(v is None for v in sums) else (float(sums[0]), float(sums[1]),
                                                          float(sums[2]))  # fmt: skip


def _state(row: Mapping[str, Any]) -> KeyState:
    return KeyState(
        n=int(row["n"]), last_end_s=_nan(row["last_end_s"]),
        last_submit_s=_nan(row["last_submit_s"]), recent=list(orjson.loads(row["recent"])),
        ew=(_nan(row["ew_s"]), _nan(row["ew_s2"]), _nan(row["ew_w"])),
        ratio_ew=(_nan(row["ratio_s"]), _nan(row["ratio_s2"]), _nan(row["ratio_w"])),
        last2_err_ew=_ew(row, "l2err"), request_err_ew=_ew(row, "rqerr"),
    )  # fmt: skip


def _none(value: float) -> float | None:
    return None if not np.isfinite(value) else float(value)


def _row(key: StateKey, state: KeyState, now: datetime) -> dict[str, Any]:
    return {
        "key_kind": key[0], "key_value": key[1], "target": key[2], "n": state.n,
        "last_end_s": _none(state.last_end_s), "last_submit_s": _none(state.last_submit_s),
        "recent": json.dumps(state.recent),
        "ew_s": state.ew[0], "ew_s2": state.ew[1], "ew_w": state.ew[2],
        "ratio_s": state.ratio_ew[0], "ratio_s2": state.ratio_ew[1], "ratio_w": state.ratio_ew[2],
        "l2err_s": state.last2_err_ew[0], "l2err_s2": state.last2_err_ew[1],
        "l2err_w": state.last2_err_ew[2], "rqerr_s": state.request_err_ew[0],
        "rqerr_s2": state.request_err_ew[1], "rqerr_w": state.request_err_ew[2],
        "updated_at": now,
    }  # fmt: skip


def stored_columns(engine: Engine) -> tuple[str, ...]:
    """The state columns the database's store has: a table created before
    :data:`ADDED_COLUMNS` is read without them (its errors: none yet) until a writer
    migrates it."""
    present = {c["name"] for c in inspect(engine).get_columns(HISTORY_TABLE)}
    return tuple(c for c in STATE_COLUMNS if c in present)


def history_select(
    pairs: Iterable[tuple[str, str]], columns: Sequence[str] | None = None
) -> Select:
    """One statement for every state row of these (key kind, key value) pairs
    (``columns``: the state columns to read, default all)."""
    keys = [history_state.c[c] for c in ("key_kind", "key_value", "target")]
    selected = select(*keys, *(history_state.c[c] for c in columns or STATE_COLUMNS))
    wanted = sorted(set(pairs))
    if not wanted:
        return selected.where(history_state.c.key_kind.is_(None))
    return selected.where(
        or_(tuple_(history_state.c.key_kind, history_state.c.key_value).in_(wanted))
    )


def read_states(
    conn: Connection, pairs: Iterable[tuple[str, str]], columns: Sequence[str] | None = None
) -> dict[StateKey, KeyState]:
    rows = conn.execute(history_select(pairs, columns)).mappings()
    return {(r["key_kind"], r["key_value"], r["target"]): _state(r) for r in rows}


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
    cfg: HistorySettings | None = None,
) -> int:
    """Apply newly finished (and submitted) jobs to their keys' rows in one transaction."""
    cfg = cfg or get_settings().history
    create_history_table(engine)
    jobs = with_derived_keys(jobs, keys)
    pairs = {(k, v) for k, c in keys.items() for v in _key_values(jobs, c) if v is not None}
    with engine.begin() as conn:
        states = read_states(conn, pairs)
        apply_jobs(states, jobs, keys, targets, cfg)
        changed = [key for key in states if (key[0], key[1]) in pairs]
        if not changed:
            return 0
        for kind in {k[0] for k in changed}:
            values = sorted({k[1] for k in changed if k[0] == kind})
            for start in range(0, len(values), 500):
                conn.execute(delete(history_state).where(
                    history_state.c.key_kind == kind,
                    history_state.c.key_value.in_(values[start : start + 500]),
                ))  # fmt: skip
        now = datetime.now(UTC).replace(tzinfo=None)
        conn.execute(history_state.insert(), [_row(k, states[k], now) for k in changed])
    return len(changed)


def _target_stats(
    states: Mapping[StateKey, KeyState],
    kind: str,
    groups: Sequence[str | None],
    target: str,
    requests: np.ndarray,
    cfg: HistorySettings,
) -> list[dict[str, float]]:
    """One key kind's statistics of one target per record: a key's are computed once per
    request value (a batch of one user's tasks costs one computation, not one per task)."""
    memo: dict[tuple[str | None, float | None], dict[str, float]] = {}
    rows = []
    for group, request in zip(groups, requests.tolist(), strict=True):
        key = (group, None if request != request else request)  # NaN: no request
        stats = memo.get(key)
        if stats is None:
            state = states.get((kind, group, target)) or KeyState()
            stats = memo[key] = state.features(request, cfg)
        rows.append(stats)
    return rows


def features_from_states(
    states: Mapping[StateKey, KeyState],
    records: pd.DataFrame,
    keys: Mapping[str, str],
    targets: Sequence[str],
    with_request: Sequence[str] = (),
    cfg: HistorySettings | None = None,
) -> tuple[pd.DataFrame, np.ndarray]:
    """History features per record (columns as :func:`history_specs` lists) and, per
    record, whether any key of it had a finished job in the store."""
    columns, found = state_features(states, records, keys, targets, with_request, cfg)
    return pd.DataFrame(columns, index=records.index), found


def state_features(
    states: Mapping[StateKey, KeyState],
    records: Mapping[str, Sequence[Any]] | pd.DataFrame,
    keys: Mapping[str, str],
    targets: Sequence[str],
    with_request: Sequence[str] = (),
    cfg: HistorySettings | None = None,
) -> tuple[dict[str, list[float]], np.ndarray]:
    """:func:`features_from_states` on columns (name -> values: ``creationdate``, the key
    columns, ``{t}_request`` where known), as plain lists: no frame for a few tasks."""
    cfg = cfg or get_settings().history
    records = with_derived_keys(records, keys)
    submit = seconds(records["creationdate"])
    out: dict[str, list[float]] = {}
    found = np.zeros(len(submit), dtype=bool)
    no_request = np.full(len(submit), np.nan)
    for kind, column in keys.items():
        groups = [None if pd.isna(v) else str(v) for v in records[column]]
        for i, group in enumerate(groups):
            activity = states.get((kind, group, ACTIVITY)) if group is not None else None
            found[i] |= activity is not None and activity.n > 0
            act = (activity or KeyState()).activity(submit[i])
            if group is None:
                act = dict.fromkeys(act, float("nan"))
            for stat, value in act.items():
                out.setdefault(feature_name(kind, stat), []).append(value)
        for t in targets:
            req_col = f"{t}_request"
            requests = np.asarray(records[req_col], float) if req_col in records else no_request
            per_record = _target_stats(states, kind, groups, t, requests, cfg)
            for stat, name in _stat_names(kind, t, t in with_request):
                out[name] = [row[stat] for row in per_record]
    return out, found


@functools.lru_cache(maxsize=256)
def _stat_names(kind: str, target: str, with_request: bool) -> tuple[tuple[str, str], ...]:
    """(statistic, feature name) of one key kind and target, built once per process."""
    return tuple((stat, feature_name(kind, stat, target)) for stat in target_stats(with_request))


STATE_COLUMNS: tuple[str, ...] = (
    "n", "last_end_s", "last_submit_s", "recent", "ew_s", "ew_s2", "ew_w",
    "ratio_s", "ratio_s2", "ratio_w", *ADDED_COLUMNS,
)  # fmt: skip
#: What the service flags on a task whose keys have no finished job in the store.
HISTORY_MISSING = "history_missing"
#: Label of the task's creation time in a joined row (the submit time of its features).
SUBMITTED = "hist__creationdate"


def _label(kind: str, target: str, column: str) -> str:
    return f"hist__{kind}__{target or 'activity'}__{column}"


def _constant(name: str) -> Any:
    """A key kind or target name inlined in SQL: the statement keeps one bound parameter
    (the task id), as the service's raw, precompiled execution expects."""
    if not re.fullmatch(r"[a-z_]*", name):
        raise ValueError(f"{name!r}: key kinds and targets are lower-case names")
    return literal_column(f"'{name}'")


def join_states(
    source: Any,
    tasks: Table,
    keys: Mapping[str, str],
    targets: Sequence[str],
    columns: Sequence[str] = STATE_COLUMNS,
) -> tuple[Any, list[Any]]:
    """``source`` outer-joined with the store row of every (key, target) of a task, and the
    labelled ``columns``: the task's history arrives in the same statement as its features."""
    labelled: list[Any] = []
    for kind, column in keys.items():
        for target in (ACTIVITY, *targets):
            row = history_state.alias(f"h_{kind}_{target or 'activity'}")
            source = source.outerjoin(
                row,
                (row.c.key_kind == _constant(kind))
                & (row.c.key_value == tasks.c[column])
                & (row.c.target == _constant(target)),
            )
            labelled += [row.c[c].label(_label(kind, target, c)) for c in columns]
    return source, labelled


def states_from_row(
    row: Mapping[str, Any], keys: Mapping[str, str], targets: Sequence[str]
) -> dict[StateKey, KeyState]:
    """The states :func:`join_states` brought back with one task's row."""
    states: dict[StateKey, KeyState] = {}
    for kind, column in keys.items():
        if row.get(column) is None:
            continue
        for target in (ACTIVITY, *targets):
            labels = _labels(kind, target)
            if row.get(labels[0][1]) is not None:  # n: the key has a store row
                fields = {c: row.get(label) for c, label in labels}
                states[(kind, str(row[column]), target)] = _state(fields)
    return states


@functools.lru_cache(maxsize=256)
def _labels(kind: str, target: str) -> tuple[tuple[str, str], ...]:
    """(state column, its label in a joined row) of one key kind and target: built once,
    not on every served task."""
    return tuple((c, _label(kind, target, c)) for c in STATE_COLUMNS)


def task_history(
    task: Mapping[str, Any], layout: HistoryLayout, keys: Mapping[str, str]
) -> tuple[dict[str, float], bool]:
    """One task's history features from its joined row, and whether any key had history.

    The submit time is the task's creation time (now when it has none)."""
    kinds = layout_keys(layout, keys)
    states = states_from_row(task, kinds, layout.targets)
    record = {**{c: task.get(c) for c in kinds.values()}, "creationdate": task.get(SUBMITTED)}
    features, found = records_history(states, [record], layout, keys)
    return features[0], found[0]


def layout_keys(layout: HistoryLayout, keys: Mapping[str, str]) -> dict[str, str]:
    """The key kinds of ``layout`` that ``keys`` names a column for (kind -> column)."""
    return {k: keys[k] for k in layout.kinds if k in keys}


def key_pairs(
    records: Iterable[Mapping[str, Any]], keys: Mapping[str, str]
) -> set[tuple[str, str]]:
    """The distinct (key kind, key value) pairs of ``records``: what to read from the store."""
    return {
        (kind, str(r[column]))
        for r in records
        for kind, column in keys.items()
        if r.get(column) is not None
    }


def records_history(
    states: Mapping[StateKey, KeyState],
    records: Sequence[Mapping[str, Any]],
    layout: HistoryLayout,
    keys: Mapping[str, str],
) -> tuple[list[dict[str, float]], list[bool]]:
    """History features of records (key columns and ``creationdate``, the submit time: now
    where None) from the store's states, and per record whether any key had history.

    The one computation behind the task path's joined row and posted tasks alike."""
    kinds = layout_keys(layout, keys)
    now = datetime.now(UTC)
    columns: dict[str, list[Any]] = {c: [r.get(c) for r in records] for c in kinds.values()}
    columns["creationdate"] = [r.get("creationdate") or now for r in records]
    features, found = state_features(states, columns, kinds, layout.targets, layout.with_request)
    names, nan = layout.names, [float("nan")] * len(records)
    if len(records) == 1:  # the served task: no transposition
        return [{n: float(features.get(n, nan)[0]) for n in names}], found.tolist()
    values = [[float(v) for v in features.get(n, nan)] for n in names]
    rows = [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]
    return rows, found.tolist()
