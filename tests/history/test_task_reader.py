"""The service's single-task read: one statement, the training features, on SQLite and PostgreSQL."""

from __future__ import annotations

import logging
import math
import os
from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pytest
from legacy_store import comparable, legacy_table, write_legacy
from panda_history import load_into
from sqlalchemy import event, inspect, make_url, text

from scoutless.config import HistorySettings, ReplaySettings, Settings
from scoutless.features.domains import domains
from scoutless.features.extract import features_of, task_features
from scoutless.features.key_state import KeyState
from scoutless.history.build import task_history_frame
from scoutless.history.db_write import write_frame
from scoutless.history.panda_db import TaskNotFound, create_schema, make_engine, read_history
from scoutless.history.schema import metadata
from scoutless.history.store import (
    LEGACY_TABLE,
    apply_jobs,
    key_states,
    migrate_legacy,
    read_states,
    update_store,
)
from scoutless.history.store_reader import states_from_row
from scoutless.history.task_reader import TASK_HISTORY_KEYS, BadTaskRecord, TaskReader
from scoutless.targets.estimators import compute_task_targets
from scoutless.targets.spec import TARGET_NAMES

#: the submission fields' domains under the default site
DOMAINS = domains(ReplaySettings())

def _same(a: dict, b: dict) -> bool:
    return all(
        (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k])) or a[k] == b[k]
        for k in a
    ) and list(a) == list(b)


def test_one_statement_per_task_and_the_training_features(tmp_path, history_frames) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    load_into(make_engine(url), history_frames)
    engine = make_engine(url, for_reads=True)
    statements: list[str] = []
    event.listen(engine, "connect", lambda conn, _: conn.set_trace_callback(statements.append))
    reader = TaskReader(engine)
    # on SQLite the reader reads through its own per-thread connection: trace that one too
    reader._sqlite_connection().set_trace_callback(statements.append)
    tasks = history_frames["jedi_tasks"]
    params = history_frames["jedi_taskparams"].set_index("jeditaskid")["taskparams"]
    batch = task_features(tasks, params, history_frames["jedi_datasets"])
    for task_id in tasks["jeditaskid"].head(20):
        before = len([s for s in statements if s.lstrip().upper().startswith("SELECT")])
        served = reader.features(int(task_id), DOMAINS)
        after = len([s for s in statements if s.lstrip().upper().startswith("SELECT")])
        assert after - before == 1, statements[-3:]
        assert _same(served, batch.loc[task_id].to_dict()), task_id
    with pytest.raises(TaskNotFound, match="999999"):
        reader.features(999_999, DOMAINS)


def test_task_without_parameters_or_datasets_and_bad_json(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'h.sqlite'}")
    create_schema(engine)
    required = {
        "username": "u",
        "status": "defined",
        "creationdate": pd.Timestamp("2026-01-01"),
        "modificationtime": pd.Timestamp("2026-01-01"),
    }  # NOT NULL in PanDA's DDL
    write_frame(engine, "jedi_tasks", pd.DataFrame([{"jeditaskid": 1, "workqueue_id": 5, **required},
                                                    {"jeditaskid": 2, **required}]))  # fmt: skip
    write_frame(engine, "jedi_taskparams", pd.DataFrame([{"jeditaskid": 2, "taskparams": "[1]"}]))
    reader = TaskReader(engine)
    alone = reader.features(1, DOMAINS)
    assert alone["workqueue_id"] == "5" and math.isnan(alone["requested_ramcount"])
    assert _same(alone, features_of({"workqueue_id": 5.0, "username": "u"}))  # int read as float
    with pytest.raises(BadTaskRecord, match=r"task 2: jedi_taskparams\.taskparams"):
        reader.features(2, DOMAINS)


def test_a_dropped_connection_is_replaced_once(tmp_path, history_frames) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    load_into(make_engine(url), history_frames)
    engine = make_engine(url, for_reads=True)
    reader = TaskReader(engine)
    task_id = int(history_frames["jedi_tasks"]["jeditaskid"].iloc[0])
    expected = reader.features(task_id, DOMAINS)
    engine.dialect.is_disconnect = lambda *args: True  # type: ignore[method-assign]
    raw = engine.raw_connection()
    raw.dbapi_connection.close()  # the server went away under the pooled connection
    raw.close()
    assert _same(reader.features(task_id, DOMAINS), expected)


PG_URL = os.environ.get("SCOUTLESS_TEST_PG_URL")


@pytest.mark.postgres
@pytest.mark.skipif(not PG_URL, reason="SCOUTLESS_TEST_PG_URL not set")
def test_postgres_reads_the_same_features_as_sqlite(tmp_path, history_frames) -> None:
    pg = make_engine(PG_URL)  # type: ignore[arg-type]
    metadata.drop_all(pg)
    try:
        load_into(pg, history_frames)
        lite = make_engine(f"sqlite:///{tmp_path / 'h.sqlite'}")
        load_into(lite, history_frames)
        pg_reader = TaskReader(make_engine(PG_URL, for_reads=True))  # type: ignore[arg-type]
        lite_reader = TaskReader(lite)
        for task_id in history_frames["jedi_tasks"]["jeditaskid"].head(10):
            for _ in range(6):  # psycopg prepares the statement from the 5th run on
                served = pg_reader.features(int(task_id), DOMAINS)
            assert _same(served, lite_reader.features(int(task_id), DOMAINS)), task_id
        pg_reader.engine.dispose()
    finally:
        metadata.drop_all(pg)
        pg.dispose()


@pytest.mark.postgres
@pytest.mark.skipif(not PG_URL, reason="SCOUTLESS_TEST_PG_URL not set")
def test_postgres_reads_of_a_session_share_one_connection(history_frames) -> None:
    """A group's reads (``TaskReader.one_connection``) take one pooled connection, read what single
    reads do, and a connection dropped under the session is replaced once."""
    pg = make_engine(PG_URL)  # type: ignore[arg-type]
    metadata.drop_all(pg)
    try:
        load_into(pg, history_frames)
        reader = TaskReader(make_engine(PG_URL, for_reads=True))  # type: ignore[arg-type]
        ids = [int(i) for i in history_frames["jedi_tasks"]["jeditaskid"].head(5)]
        alone = [reader.features(i, DOMAINS) for i in ids]
        checkouts: list[object] = []
        event.listen(reader.engine, "checkout", lambda *args: checkouts.append(args[0]))
        with reader.one_connection():
            together = [reader.features(i, DOMAINS) for i in ids]
            reader._local.raw.dbapi_connection.close()  # the server went away under it
            again = reader.features(ids[0], DOMAINS)
        assert len(checkouts) == 2  # one for the group, one to replace the dropped one
        assert all(_same(a, b) for a, b in zip(alone, together, strict=True))
        assert _same(again, alone[0])
        reader.features(ids[1], DOMAINS)  # after the session: its own checkout, as before
        assert len(checkouts) == 3
        reader.engine.dispose()
    finally:
        metadata.drop_all(pg)
        pg.dispose()


@pytest.mark.postgres
@pytest.mark.skipif(not PG_URL, reason="SCOUTLESS_TEST_PG_URL not set")
def test_postgres_migrates_a_legacy_store_and_joins_the_same_states_as_sqlite(
    tmp_path, history_frames
) -> None:
    """PostgreSQL holding the store's first layout: the service's reader moves it into one
    row per key, and a task's joined row carries the states SQLite's store gives it."""
    pg = make_engine(PG_URL)  # type: ignore[arg-type]
    _drop_all(pg)
    try:
        load_into(pg, history_frames)
        lite = make_engine(f"sqlite:///{tmp_path / 'h.sqlite'}")
        load_into(lite, history_frames)
        history = read_history(lite)
        done = task_history_frame(
            history.tasks, history.jobs, compute_task_targets(history.jobs, history.tasks, settings=Settings())
        )
        update_store(lite, done, TASK_HISTORY_KEYS, list(TARGET_NAMES), HistorySettings())
        states: dict = {}
        apply_jobs(states, done, TASK_HISTORY_KEYS, list(TARGET_NAMES), HistorySettings())
        write_legacy(pg, states)
        pg_reader = TaskReader(make_engine(PG_URL, for_reads=True))  # type: ignore[arg-type]
        assert pg_reader.with_history and not inspect(pg).has_table(LEGACY_TABLE)
        lite_reader = TaskReader(make_engine(f"sqlite:///{tmp_path / 'h.sqlite'}", for_reads=True))
        joined = 0
        for task_id in history_frames["jedi_tasks"]["jeditaskid"].head(10):
            got, want = (
                states_from_row(r.inputs(int(task_id))[0], TASK_HISTORY_KEYS)
                for r in (pg_reader, lite_reader)
            )
            assert comparable(got) == comparable(want), task_id
            joined += len(got)
        assert joined > 0
        pg_reader.engine.dispose()
    finally:
        _drop_all(pg)
        pg.dispose()


def _drop_all(engine) -> None:  # type: ignore[no-untyped-def]
    metadata.drop_all(engine)
    key_states.drop(engine, checkfirst=True)
    legacy_table().drop(engine, checkfirst=True)


@pytest.mark.postgres
@pytest.mark.skipif(not PG_URL, reason="SCOUTLESS_TEST_PG_URL not set")
def test_postgres_workers_migrating_a_legacy_store_at_once_move_each_key_once() -> None:
    """Four workers start together on PostgreSQL holding the first layout: one moves every
    key, the others wait for it and find the table gone (no deadlock, no error)."""
    pg = make_engine(PG_URL)  # type: ignore[arg-type]
    _drop_all(pg)
    try:
        states = {("user", f"u{i}", t): KeyState(n=i + 1, recent=[float(i)])
                  for i in range(50) for t in ("", "walltime")}  # fmt: skip
        write_legacy(pg, states)
        key_states.create(pg)
        engines = [make_engine(PG_URL) for _ in range(4)]  # type: ignore[arg-type]
        with ThreadPoolExecutor(4) as pool:
            moved = sorted(pool.map(migrate_legacy, engines))
        assert moved == [0, 0, 0, 50]
        with pg.connect() as conn:
            assert comparable(read_states(conn, {(k[0], k[1]) for k in states})) == comparable(
                states
            )
        for engine in engines:
            engine.dispose()
    finally:
        _drop_all(pg)
        pg.dispose()


@pytest.mark.postgres
@pytest.mark.skipif(not PG_URL, reason="SCOUTLESS_TEST_PG_URL not set")
def test_postgres_read_only_reader_on_a_legacy_store_reads_tasks_and_loses_nothing(
    history_frames, caplog
) -> None:
    """A service whose database user may only read cannot migrate: it says so, reads tasks
    (answered and flagged without history), and the legacy store stays for a writer."""
    pg = make_engine(PG_URL)  # type: ignore[arg-type]
    admin = pg.execution_options(isolation_level="AUTOCOMMIT")
    role = "scoutless_test_reader"
    _drop_all(pg)
    try:
        load_into(pg, history_frames)
        write_legacy(pg, {("user", "someone", ""): KeyState(n=1)})
        with admin.connect() as conn:
            conn.execute(text(f"DROP ROLE IF EXISTS {role}"))
            conn.execute(text(f"CREATE ROLE {role} LOGIN"))
            conn.execute(text(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"))
        url = make_url(PG_URL).set(username=role).render_as_string(hide_password=False)
        with caplog.at_level(logging.WARNING, logger="scoutless.history.task_reader"):
            reader = TaskReader(make_engine(url, for_reads=True))
        assert not reader.with_history and "not migrated" in caplog.text
        task_id = int(history_frames["jedi_tasks"]["jeditaskid"].iloc[0])
        plain = TaskReader(make_engine(PG_URL, for_reads=True), with_history=False)  # type: ignore[arg-type]
        assert _same(reader.features(task_id, DOMAINS), plain.features(task_id, DOMAINS))
        plain.engine.dispose()
        assert inspect(pg).has_table(LEGACY_TABLE)
        reader.engine.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP OWNED BY {role}"))
            conn.execute(text(f"DROP ROLE IF EXISTS {role}"))
        _drop_all(pg)
        pg.dispose()
