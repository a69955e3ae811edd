"""PanDA's production database is Oracle: what the reader, the history store and the
prediction log send must be valid Oracle SQL. Without a server, every statement they issue
on SQLite is captured and compiled for SQLAlchemy's Oracle dialect: identifiers within its
length limit, FETCH FIRST instead of LIMIT, IN lists under Oracle's 1000, ids from a
sequence, and the store's LOCK TABLE in Oracle's syntax. A missing driver names the extra."""

from __future__ import annotations

import sys
from datetime import datetime

import numpy as np
import pandas as pd
import pytest
from legacy_store import write_legacy
from panda_history import load_into, make_history_frames
from sqlalchemy import BindParameter, Sequence, event
from sqlalchemy.dialects import oracle
from sqlalchemy.schema import CreateIndex, CreateSequence, CreateTable
from sqlalchemy.sql import ClauseElement, visitors
from sqlalchemy.sql.ddl import DDLElement

from scoutless.config import HistorySettings
from scoutless.features.history import history_keys
from scoutless.features.key_state import KeyState
from scoutless.history import store
from scoutless.history.panda_db import DriverMissing, make_engine, read_history, task_ids
from scoutless.history.schema import metadata as panda_metadata
from scoutless.history.task_reader import TaskReader, single_task_statement
from scoutless.ops.prediction_log import PredictionLog, log_metadata, predictions_table

ORACLE = oracle.dialect()
#: Oracle refuses an IN list longer than this
ORACLE_MAX_IN = 1000


def _capture(engine) -> list:  # type: ignore[no-untyped-def]
    """Every Core statement and every raw SQL string ``engine`` executes, in order."""
    seen: list = []

    @event.listens_for(engine, "before_execute")
    def _core(conn, clause, multiparams, params, options):  # type: ignore[no-untyped-def]
        seen.append(clause)

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _raw(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if statement.startswith("LOCK TABLE"):  # what Oracle gets; SQLite has no LOCK
            seen.append(statement)
            return "SELECT 1", ()
        return statement, parameters

    return seen


def _oracle_sql(statement: ClauseElement) -> str:
    sql = str(statement.compile(dialect=ORACLE))
    for bind in visitors.iterate(statement):
        if isinstance(bind, BindParameter) and bind.expanding and bind.value is not None:
            assert len(bind.value) < ORACLE_MAX_IN, sql[:200]
    return sql


def _store_workload(engine) -> None:  # type: ignore[no-untyped-def]
    keys = history_keys(["user", "executable"])
    n = 40
    submit = pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(np.arange(n) * 600, unit="s")
    jobs = pd.DataFrame({
        "user": np.where(np.arange(n) % 2, "a", "b"), "executable": "x",
        "creationdate": submit, "finished_at": submit + pd.Timedelta(hours=1),
        "walltime_value": np.linspace(100, 4000, n),
    })  # fmt: skip
    write_legacy(engine, {("user", "old", "walltime"): KeyState()})
    # migrates the legacy table first
    store.update_store(engine, jobs, keys, ["walltime"], HistorySettings())
    with engine.connect() as conn:
        store.read_states(conn, [("user", "a"), ("executable", "x")])


def _log_workload(engine) -> None:  # type: ignore[no-untyped-def]
    log = PredictionLog(engine)
    row = {"request_id": "r1", "jeditaskid": 5000, "model_version": "v1", "policy": "argmax",
           "predictions": {"memory": {"class_id": 1, "class_label": "1-2GB",
                                      "recommended_value": None, "probabilities": [0.2, 0.8]}},
           "features": "{}"}  # fmt: skip
    log.write([row])
    log.read(since=datetime(2020, 1, 1), target="memory", model_version="v1")
    log.task_ids()
    log.count()


def test_every_statement_of_reader_store_and_log_compiles_for_oracle(tmp_path, monkeypatch):
    engine = make_engine(f"sqlite:///{tmp_path / 'h.sqlite'}")
    load_into(engine, make_history_frames(n_tasks=30, jobs_per_task=3))
    seen = _capture(engine)
    monkeypatch.setattr("scoutless.history.panda_db._ID_CHUNK", 7)  # several IN chunks
    read_history(engine)
    task_ids(engine, since=datetime(2020, 1, 1), until=datetime(2030, 1, 1))
    monkeypatch.setattr(engine.dialect, "name", "oracle")  # the store's server-side path
    _store_workload(engine)
    monkeypatch.undo()
    reader = TaskReader(engine, with_history=True)
    reader.inputs(5001)
    reader.states([("user", "a")])
    _log_workload(engine)

    core = [s for s in seen if isinstance(s, ClauseElement) and not isinstance(s, DDLElement)]
    assert len(core) > 20
    compiled = [_oracle_sql(s) for s in core]
    compiled += [_oracle_sql(single_task_statement(with_history=h)) for h in (False, True)]
    # SQLite's log rows go through its raw executemany; Oracle's through this insert
    log_columns = [c.name for c in predictions_table.columns if c.name != "id"]
    compiled.append(
        str(predictions_table.insert().compile(dialect=ORACLE, column_keys=log_columns))
    )
    assert not [sql for sql in compiled if " LIMIT " in sql.upper()]
    inserts = [sql for sql in compiled if sql.startswith("INSERT INTO scoutless_task_predictions")]
    assert inserts and all("scoutless_predictions_seq.nextval" in sql for sql in inserts)
    locks = [s for s in seen if isinstance(s, str)]
    assert locks == [f"LOCK TABLE {store.LEGACY_TABLE} IN EXCLUSIVE MODE"]


def test_the_ops_tables_number_their_rows_through_a_sequence_on_oracle():
    """Oracle has no autoincrement without a sequence: alerts and rollout rows name one."""
    from scoutless.ops.alerts import alerts_table
    from scoutless.ops.rollout import rollout_table

    for table, sequence in ((alerts_table, "scoutless_alerts_seq"),
                            (rollout_table, "scoutless_rollout_seq")):  # fmt: skip
        columns = [c.name for c in table.columns if c.name != "id"]
        sql = str(table.insert().compile(dialect=ORACLE, column_keys=columns))
        assert f"{sequence}.nextval" in sql, sql


def test_a_limited_read_becomes_fetch_first():
    from sqlalchemy import select

    t = predictions_table
    sql = _oracle_sql(select(t.c.id).order_by(t.c.id).limit(5))
    assert "FETCH FIRST" in sql and "LIMIT" not in sql


def test_every_table_index_and_sequence_is_valid_oracle_ddl():
    limit = ORACLE.max_identifier_length
    tables = [*panda_metadata.tables.values(), *log_metadata.tables.values(),
              *store.store_metadata.tables.values()]  # fmt: skip
    names: list[str] = []
    for table in tables:
        str(CreateTable(table).compile(dialect=ORACLE))
        names += [table.name, *(c.name for c in table.columns)]
        names += [c.name for c in table.constraints if isinstance(c.name, str)]
        for index in table.indexes:
            str(CreateIndex(index).compile(dialect=ORACLE))
            names.append(str(index.name))
        for column in table.columns:
            if isinstance(column.default, Sequence):
                sql = str(CreateSequence(column.default).compile(dialect=ORACLE))
                assert sql.startswith("CREATE SEQUENCE")
                names.append(column.default.name)
    assert [n for n in names if len(n) > limit] == []


def test_an_oracle_url_without_its_driver_names_the_extra(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from scoutless.cli.main import app

    monkeypatch.setitem(sys.modules, "oracledb", None)  # as where python-oracledb is absent
    url = "oracle+oracledb://scoutless:secret@127.0.0.1:1521/?service_name=panda"
    with pytest.raises(DriverMissing, match=r"pip install oracledb"):
        make_engine(url)
    result = CliRunner().invoke(app, ["data", "build", "--db", url, "--out", str(tmp_path / "t")])
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "needs the oracledb driver" in said and "pip install oracledb" in said
    assert "thin mode needs no Oracle client" in said
