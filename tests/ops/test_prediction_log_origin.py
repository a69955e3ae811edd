"""Each logged row names its caller and where its features came from; an older log gains
the two columns when opened (SQLite, PostgreSQL); rows whose features a caller posted are
never held against the task they name (actuals, arms)."""

from __future__ import annotations

import os
import uuid
from datetime import datetime

import pandas as pd
import pytest
from sqlalchemy import Column, Engine, MetaData, Table, create_engine, text

from scoutless.history.panda_db import make_engine
from scoutless.ops.actuals import join_predictions
from scoutless.ops.impact import logged_arms
from scoutless.ops.prediction_log import (
    DATABASE,
    POSTED,
    TABLE_NAME,
    PredictionLog,
    predictions_table,
)

PG_URL = os.environ.get("SCOUTLESS_TEST_PG_URL")


def _row(task_id: int, value: float, **extra) -> dict:  # type: ignore[no-untyped-def]
    entry = {"class_id": 1, "class_label": "c1", "recommended_value": value,
             "probabilities": [0.2, 0.8]}  # fmt: skip
    return {"request_id": f"r{value}", "jeditaskid": task_id, "model_version": "v1",
            "policy": "argmax", "predictions": {"memory": entry},
            "features": '{"corecount": 8.0}', **extra}  # fmt: skip


def _older_log(engine: Engine) -> None:
    """The table as written before the caller and source columns, with one row."""
    columns = [Column(c.name, c.type, primary_key=c.primary_key)
               for c in predictions_table.columns if c.name not in ("caller", "source")]  # fmt: skip
    old = Table(TABLE_NAME, MetaData(), *columns)
    old.metadata.create_all(engine)
    predictions = ('{"memory": {"class_id": 1, "class_label": "c1", "recommended_value": 100.0, '
                   '"probabilities": [1.0]}}')
    with engine.begin() as conn:
        conn.execute(old.insert(), {**_row(7, 100.0), "predictions": predictions,
                                    "created_at": datetime(2026, 1, 1)})  # fmt: skip


def _opens_older_log(engine: Engine) -> None:
    _older_log(engine)
    log = PredictionLog(engine)
    log.write([_row(7, 200.0, caller="jedi", source=DATABASE)])
    frame = log.read().astype(object).where(lambda f: f.notna(), None)
    assert frame["caller"].tolist() == [None, "jedi"]
    assert frame["source"].tolist() == [None, DATABASE]
    engine.dispose()


def test_an_older_sqlite_log_gains_caller_and_source(tmp_path) -> None:  # type: ignore[no-untyped-def]
    _opens_older_log(make_engine(f"sqlite:///{tmp_path / 'log.sqlite'}"))


@pytest.mark.postgres
@pytest.mark.skipif(not PG_URL, reason="SCOUTLESS_TEST_PG_URL not set")
def test_an_older_postgres_log_gains_caller_and_source() -> None:
    schema = f"guard_{uuid.uuid4().hex[:8]}"  # the server is shared: a schema of its own
    admin = create_engine(PG_URL)  # type: ignore[arg-type]
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:  # that schema alone: the shared one's table must not be seen
        options = {"options": f"-csearch_path={schema}"}
        _opens_older_log(create_engine(PG_URL, connect_args=options))  # type: ignore[arg-type]
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def test_posted_features_are_never_held_against_the_task_they_name(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A predict token posting made-up features under task 7's id, after the real one."""
    log = PredictionLog(f"sqlite:///{tmp_path / 'log.sqlite'}")
    log.write([_row(7, 2000.0, caller="jedi", source=DATABASE, arm="canary")])
    log.write([_row(7, 1.0, caller="mallory", source=POSTED),
               _row(8, 1.0, caller="mallory", source=POSTED)])  # fmt: skip
    frame = log.read()
    assert frame.sort_values("id")["caller"].tolist() == ["jedi", "mallory", "mallory"]
    actuals = pd.DataFrame({"jeditaskid": [7, 8], "target": "memory", "class_id": 1,
                            "value": 1800.0})  # fmt: skip
    joined = join_predictions(frame, actuals)
    assert joined[["jeditaskid", "recommended_value"]].values.tolist() == [[7, 2000.0]]
    arms, values = logged_arms(log.engine)
    assert arms["arm"].to_dict() == {7: "canary"} and values["memory"].to_dict() == {7: 2000.0}
    assert log.task_ids() == [7]  # no actuals collected for what only a caller posted
