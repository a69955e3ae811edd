"""The history-feature store's reader: the rows of a task's keys (joined to its own row,
:func:`join_states`, or read by key, ``store.read_states``) turned into the same history
features training computed (:func:`features_from_states`, :func:`records_history`).

The table, its packed states and the writer (``update_store``) are ``history/store.py``'s.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import (
    Table,
    literal_column,
)

from scoutless.config import HistorySettings
from scoutless.features.history import (
    HistoryLayout,
    feature_name,
    seconds,
    target_stats,
    with_derived_keys,
)
from scoutless.features.key_state import KeyState
from scoutless.history.store import ACTIVITY, StateKey, key_states, states_of_key


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
    *,
    cfg: HistorySettings,
) -> tuple[pd.DataFrame, np.ndarray]:
    """History features per record (columns as :func:`history_specs` lists) and, per
    record, whether any key of it had a finished job in the store."""
    columns, found = state_features(states, records, keys, targets, with_request, cfg=cfg)
    return pd.DataFrame(columns, index=records.index), found


def state_features(
    states: Mapping[StateKey, KeyState],
    records: Mapping[str, Sequence[Any]] | pd.DataFrame,
    keys: Mapping[str, str],
    targets: Sequence[str],
    with_request: Sequence[str] = (),
    *,
    cfg: HistorySettings,
) -> tuple[dict[str, list[float]], np.ndarray]:
    """:func:`features_from_states` on columns (name -> values: ``creationdate``, the key
    columns, ``{t}_request`` where known), as plain lists: no frame for a few tasks."""
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


#: Label of the task's creation time in a joined row (the submit time of its features).
SUBMITTED = "hist__creationdate"


def _label(kind: str) -> str:
    return f"hist__{kind}__states"


def _constant(name: str) -> Any:
    """A key kind inlined in SQL: the statement keeps one bound parameter (the task id), as
    the service's raw, precompiled execution expects."""
    if not re.fullmatch(r"[a-z_]*", name):
        raise ValueError(f"{name!r}: key kinds are lower-case names")
    return literal_column(f"'{name}'")


def join_states(source: Any, tasks: Table, keys: Mapping[str, str]) -> tuple[Any, list[Any]]:
    """``source`` outer-joined with the store row of each of a task's keys, and the labelled
    states column: the task's history arrives in the same statement as its features."""
    labelled: list[Any] = []
    for kind, column in keys.items():
        row = key_states.alias(f"h_{kind}")
        source = source.outerjoin(
            row, (row.c.key_kind == _constant(kind)) & (row.c.key_value == tasks.c[column])
        )
        labelled.append(row.c.states.label(_label(kind)))
    return source, labelled


def states_from_row(row: Mapping[str, Any], keys: Mapping[str, str]) -> dict[StateKey, KeyState]:
    """The states :func:`join_states` brought back with one task's row."""
    states: dict[StateKey, KeyState] = {}
    for kind, column in keys.items():
        packed = row.get(_label(kind))
        if packed is not None and row.get(column) is not None:
            states.update(states_of_key(kind, str(row[column]), packed))
    return states


def task_history(
    task: Mapping[str, Any], layout: HistoryLayout, keys: Mapping[str, str], cfg: HistorySettings
) -> tuple[dict[str, float], bool]:
    """One task's history features from its joined row, and whether any key had history.

    The submit time is the task's creation time (now when it has none)."""
    kinds = layout_keys(layout, keys)
    states = states_from_row(task, kinds)
    record = {**{c: task.get(c) for c in kinds.values()}, "creationdate": task.get(SUBMITTED)}
    features, found = records_history(states, [record], layout, keys, cfg)
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
    cfg: HistorySettings,
) -> tuple[list[dict[str, float]], list[bool]]:
    """History features of records (key columns and ``creationdate``, the submit time: now
    where None) from the store's states, and per record whether any key had history.

    The one computation behind the task path's joined row and posted tasks alike."""
    kinds = layout_keys(layout, keys)
    now = datetime.now(UTC)
    columns: dict[str, list[Any]] = {c: [r.get(c) for r in records] for c in kinds.values()}
    columns["creationdate"] = [r.get("creationdate") or now for r in records]
    features, found = state_features(
        states, columns, kinds, layout.targets, layout.with_request, cfg=cfg
    )
    names, nan = layout.names, [float("nan")] * len(records)
    if len(records) == 1:  # the served task: no transposition
        return [{n: float(features.get(n, nan)[0]) for n in names}], found.tolist()
    values = [[float(v) for v in features.get(n, nan)] for n in names]
    rows = [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]
    return rows, found.tolist()
