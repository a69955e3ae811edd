"""DataFrame columns to DBAPI values: every dtype the histories use, missing values as None."""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.history.dbapi import dbapi_column, dbapi_rows

ints = st.lists(st.one_of(st.none(), st.integers(-(2**62), 2**62)), min_size=1, max_size=40)
floats = st.lists(
    st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=False)), max_size=40
)
texts = st.lists(st.one_of(st.none(), st.text(max_size=8)), max_size=40)
times = st.lists(
    st.one_of(
        st.none(), st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1))
    ),
    max_size=40,
)


def _reference(col: pd.Series) -> list:
    """The slow, obvious conversion."""
    return [None if pd.isna(v) else v for v in col.astype(object)]


@settings(max_examples=60, deadline=None)
@given(values=ints)
def test_integers_with_and_without_missing(values) -> None:
    nullable = pd.Series(values, dtype="Int64")
    assert dbapi_column(nullable, datetime_text=True) == values
    plain = pd.Series([v or 0 for v in values], dtype=np.int64)
    out = dbapi_column(plain, datetime_text=True)
    assert out == [v or 0 for v in values] and all(type(v) is int for v in out)


@settings(max_examples=60, deadline=None)
@given(values=floats)
def test_floats_nan_becomes_none(values) -> None:
    col = pd.Series([np.nan if v is None else v for v in values], dtype=np.float64)
    out = dbapi_column(col, datetime_text=True)
    assert out == [None if v is None or math.isnan(v) else v for v in values]


@settings(max_examples=60, deadline=None)
@given(values=texts)
def test_strings_in_object_and_string_dtypes(values) -> None:
    for dtype in (object, "str", "string"):
        col = pd.Series(values, dtype=dtype)
        assert dbapi_column(col, datetime_text=True) == _reference(col), dtype


@settings(max_examples=60, deadline=None)
@given(values=times)
def test_datetimes_as_sqlite_text_or_datetime(values) -> None:
    col = pd.Series(pd.to_datetime(values)).astype("datetime64[us]")
    text = dbapi_column(col, datetime_text=True)
    assert text == [None if v is None else v.strftime("%Y-%m-%d %H:%M:%S.%f") for v in values]
    assert dbapi_column(col, datetime_text=False) == values


def test_rows_zip_the_columns() -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": [0.5, np.nan], "c": ["x", None]})
    assert list(dbapi_rows(frame, datetime_text=True)) == [(1, 0.5, "x"), (2, None, None)]


@settings(max_examples=25, deadline=None)
@given(n_rows=st.integers(0, 400), n_cols=st.integers(4, 9))  # 111-249 rows a statement
def test_sqlite_multi_row_inserts_store_every_row_in_order(tmp_path_factory, n_rows, n_cols):
    """Rows go to SQLite as multi-row VALUES statements of at most 999 parameters: every
    row arrives, in order, whatever the split into statements."""
    from sqlalchemy import text

    from scoutless.history import db_write, panda_db

    folder = tmp_path_factory.mktemp("insert")
    engine = panda_db.make_engine(f"sqlite:///{folder}/t.sqlite")
    cols = [f"c{j}" for j in range(n_cols)]
    with engine.begin() as conn:
        conn.execute(text(f"CREATE TABLE t (id INTEGER PRIMARY KEY, {', '.join(cols)})"))
    rows = [tuple(None if (i + j) % 7 == 0 else f"{i}-{j}" for j in range(n_cols))
            for i in range(n_rows)]  # fmt: skip
    assert db_write._sqlite_insert(engine, "t", cols, iter(rows), n_rows) == n_rows
    with engine.connect() as conn:
        stored = conn.execute(text(f"SELECT {', '.join(cols)} FROM t ORDER BY id")).all()
    engine.dispose()
    assert [tuple(r) for r in stored] == rows


def test_sqlite_insert_records_keeps_a_key_only_later_rows_have(tmp_path) -> None:
    """The columns are every record's keys, not the first record's: a value only a later
    row carries is stored, and a row lacking a key gets NULL (nothing silently dropped)."""
    from sqlalchemy import Column, Integer, MetaData, String, Table, select

    from scoutless.history import db_write, panda_db

    engine = panda_db.make_engine(f"sqlite:///{tmp_path}/t.sqlite")
    table = Table("t", MetaData(), Column("id", Integer, primary_key=True),
                  Column("a", String(8)), Column("b", String(8)))  # fmt: skip
    table.metadata.create_all(engine)
    records = [{"id": 1, "a": "x"}, {"id": 2, "a": "y", "b": "later"}]
    assert db_write.insert_records(engine, table, records) == 2
    with engine.connect() as conn:
        stored = [tuple(r) for r in conn.execute(select(table).order_by(table.c.id))]
    engine.dispose()
    assert stored == [(1, "x", None), (2, "y", "later")]
