"""Writes the store's first layout (one row per key and target), as earlier versions did,
so tests can check that it is migrated without losing a key's history."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime

import orjson
from sqlalchemy import Column, DateTime, Engine, Float, Integer, MetaData, String, Table, Text

from scoutless.features.key_state import KeyState
from scoutless.history.store import LEGACY_COLUMNS, LEGACY_TABLE, StateKey, pack_state

#: the columns the experts' errors added later (a table from before them lacks them)
ERROR_COLUMNS = LEGACY_COLUMNS[-6:]


def legacy_table(with_errors: bool = True) -> Table:
    skipped = {"n", "recent", *(() if with_errors else ERROR_COLUMNS)}
    floats = [c for c in LEGACY_COLUMNS if c not in skipped]
    return Table(
        LEGACY_TABLE, MetaData(),
        Column("key_kind", String(16), primary_key=True),
        Column("key_value", String(256), primary_key=True),
        Column("target", String(32), primary_key=True),
        Column("n", Integer, nullable=False), Column("recent", Text, nullable=False),
        *(Column(c, Float) for c in floats), Column("updated_at", DateTime, nullable=False),
    )  # fmt: skip


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def legacy_row(key: StateKey, state: KeyState, with_errors: bool) -> dict:
    row = {
        "key_kind": key[0], "key_value": key[1], "target": key[2], "n": state.n,
        "recent": json.dumps(state.recent), "last_end_s": _finite(state.last_end_s),
        "last_submit_s": _finite(state.last_submit_s), "updated_at": datetime(2024, 1, 1),
        **dict(zip(("ew_s", "ew_s2", "ew_w"), state.ew, strict=True)),
        **dict(zip(("ratio_s", "ratio_s2", "ratio_w"), state.ratio_ew, strict=True)),
    }  # fmt: skip
    if with_errors:
        row.update(zip(ERROR_COLUMNS, (*state.last2_err_ew, *state.request_err_ew), strict=True))
    return row


def write_legacy(
    engine: Engine, states: Mapping[StateKey, KeyState], *, with_errors: bool = True
) -> None:
    """A legacy table holding ``states`` (created here; the current table is left as is)."""
    table = legacy_table(with_errors)
    table.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(table.insert(), [legacy_row(k, s, with_errors) for k, s in states.items()])


def comparable(states: Mapping[StateKey, KeyState]) -> dict[StateKey, bytes]:
    """States comparable with NaN in them (packed as the store writes them)."""
    option = orjson.OPT_SERIALIZE_NUMPY
    return {key: orjson.dumps(pack_state(state), option=option) for key, state in states.items()}
