"""The same reader code on a real PostgreSQL server (started by .ci/run / scripts/services.sh)."""

from __future__ import annotations

import os

import pandas as pd
import pytest
from panda_history import load_into

from scoutless.config import Settings
from scoutless.history.build import build_table_from_db
from scoutless.history.panda_db import make_engine
from scoutless.history.schema import metadata

PG_URL = os.environ.get("SCOUTLESS_TEST_PG_URL")

if not PG_URL:
    if os.environ.get("CI"):
        pytest.fail("CI must run the PostgreSQL test: SCOUTLESS_TEST_PG_URL is not set")
    pytest.skip(
        "SCOUTLESS_TEST_PG_URL not set (scripts/services.sh starts a server)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_engine():
    from scoutless.ops.prediction_log import legacy_table, predictions_table

    engine = make_engine(PG_URL)
    metadata.drop_all(engine)
    for table in (predictions_table, legacy_table):
        table.drop(engine, checkfirst=True)
    yield engine
    metadata.drop_all(engine)
    for table in (predictions_table, legacy_table):
        table.drop(engine, checkfirst=True)
    engine.dispose()


def test_postgres_history_builds_the_same_table_as_sqlite(pg_engine, sqlite_engine, history_frames):
    assert pg_engine.dialect.name == "postgresql"
    load_into(pg_engine, history_frames)
    load_into(sqlite_engine, history_frames)
    pg_table, pg_report = build_table_from_db(pg_engine, settings=Settings())
    lite_table, _ = build_table_from_db(sqlite_engine, settings=Settings())
    assert len(pg_report) == 0
    assert len(pg_table.frame) == len(history_frames["jedi_tasks"])
    pd.testing.assert_frame_equal(
        pg_table.frame.drop(columns=["creationdate"]),
        lite_table.frame.drop(columns=["creationdate"]),
        check_dtype=False,
    )


def test_generated_history_through_copy_into_postgres(pg_engine):
    """The generator's COPY path and the reader on PostgreSQL, with the Bayes truth."""
    from scoutless.history.synthetic import generate_history

    stats = generate_history(pg_engine, 300, seed=3, progress=False)
    assert stats.n_tasks == 300 and stats.n_jobs > 300 * 5
    from scoutless.cli.data import synthetic_truth

    table, report = build_table_from_db(pg_engine, read_truth=synthetic_truth, settings=Settings())
    assert len(table.frame) + len({r["jeditaskid"] for r in report.rows}) >= 290
    assert table.frame["memory_bayes_class"].ge(0).all()
    assert set(table.frame["split_random"]) == {"train", "test"}


def test_prediction_log_batches_go_through_copy_on_postgres(pg_engine):
    """Large log writes take the raw COPY path; small ones SQLAlchemy; both read back."""
    from scoutless.ops.prediction_log import BULK_MIN_ROWS, PredictionLog

    log = PredictionLog(pg_engine)
    row = {
        "request_id": "r1", "jeditaskid": None, "model_version": "v1", "policy": "argmax",
        "predictions": '{"memory": {"class_id": 1, "class_label": "1-2GB", '
        '"recommended_value": 2000.0, "probabilities": [0.2, 0.8]}}', "features": "{}",
    }  # fmt: skip
    assert log.write([row] * 3) == 3
    assert log.write([{**row, "jeditaskid": 7}] * BULK_MIN_ROWS) == BULK_MIN_ROWS
    back = log.read(target="memory")
    assert len(back) == 3 + BULK_MIN_ROWS
    assert back["jeditaskid"].isna().sum() == 3 and (back["jeditaskid"] == 7).sum() == BULK_MIN_ROWS
    assert back["created_at"].notna().all()


def test_rows_read_back_from_sqlite_copy_into_postgres(pg_engine, sqlite_engine, history_frames):
    """A table read back with a missing value holds its integers as floats (600.0); COPY
    into an integer column takes them as the integers they are."""
    from sqlalchemy import text

    from scoutless.history.db_write import bulk_insert
    from scoutless.history.panda_db import read_history

    load_into(sqlite_engine, history_frames)
    tasks = read_history(sqlite_engine, with_jobs=False).tasks.head(5).copy()
    tasks["basewalltime"] = [600.0, None, 600.0, 1200.0, None]
    metadata.create_all(pg_engine)
    assert bulk_insert(pg_engine, "jedi_tasks", tasks) == 5
    with pg_engine.connect() as conn:
        got = conn.execute(text("SELECT basewalltime FROM jedi_tasks ORDER BY jeditaskid"))
        assert [r[0] for r in got] == [600, None, 600, 1200, None]
