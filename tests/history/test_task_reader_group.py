"""A group of tasks read in one statement (``TaskReader.inputs_many``): on PostgreSQL one
``= ANY(:ids)`` statement whose rows decode exactly as each task's own read; a missing task
or a bad record is that task's outcome only; a grouped statement that fails falls back to
the per-task reads; SQLite reads a group one task at a time."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pandas as pd
import pytest
from panda_history import load_into

from scoutless.config import HistorySettings, Settings
from scoutless.history.build import task_history_frame
from scoutless.history.db_write import write_frame
from scoutless.history.panda_db import (
    DatabaseUnavailable,
    TaskNotFound,
    make_engine,
    read_history,
)
from scoutless.history.schema import metadata
from scoutless.history.store import key_states, update_store
from scoutless.history.task_reader import (
    TASK_HISTORY_KEYS,
    BadTaskRecord,
    TaskReader,
    outcome_of,
)
from scoutless.targets.estimators import compute_task_targets
from scoutless.targets.spec import TARGET_NAMES

PG_URL = os.environ.get("SCOUTLESS_TEST_PG_URL")


def postgres(test):  # type: ignore[no-untyped-def]
    """A test of PostgreSQL (``SCOUTLESS_TEST_PG_URL``), skipped without one."""
    skip = pytest.mark.skipif(not PG_URL, reason="SCOUTLESS_TEST_PG_URL not set")
    return pytest.mark.postgres(skip(test))


MISSING, BAD = 999_999, 999_998  # no such task; a task whose parameters are not an object


def _add_bad_task(engine) -> None:  # type: ignore[no-untyped-def]
    required = {"username": "u", "status": "defined", "creationdate": pd.Timestamp("2026-01-01"),
                "modificationtime": pd.Timestamp("2026-01-01")}  # fmt: skip
    write_frame(engine, "jedi_tasks", pd.DataFrame([{"jeditaskid": BAD, **required}]))
    write_frame(engine, "jedi_taskparams", pd.DataFrame([{"jeditaskid": BAD, "taskparams": "[1]"}]))


def _with_store(engine, frames: dict) -> None:  # type: ignore[no-untyped-def]
    """The history store of the loaded tasks (the grouped statement joins it too)."""
    history = read_history(engine)
    done = task_history_frame(
        history.tasks, history.jobs, compute_task_targets(history.jobs, history.tasks, settings=Settings())
    )
    update_store(engine, done, TASK_HISTORY_KEYS, list(TARGET_NAMES), HistorySettings())


@pytest.fixture
def pg_reader(history_frames, request) -> Iterator[TaskReader]:
    """A reader of PostgreSQL holding ``history_frames``, the bad task and, when the test
    is parametrized so, the history store."""
    pg = make_engine(PG_URL)  # type: ignore[arg-type]
    metadata.drop_all(pg)
    key_states.drop(pg, checkfirst=True)
    try:
        load_into(pg, history_frames)
        _add_bad_task(pg)
        store = getattr(request, "param", False)
        if store:
            _with_store(pg, history_frames)
        reader = TaskReader(make_engine(PG_URL, for_reads=True))  # type: ignore[arg-type]
        assert reader.with_history == store
        yield reader
        reader.engine.dispose()
    finally:
        metadata.drop_all(pg)
        key_states.drop(pg, checkfirst=True)
        pg.dispose()


def _ids(frames: dict, n: int) -> list[int]:
    return [int(i) for i in frames["jedi_tasks"]["jeditaskid"].head(n)]


def _counted(reader: TaskReader) -> list[str]:
    """The statements the reader sends, recorded."""
    sent: list[str] = []
    execute = reader._execute

    def counted(sql, args):  # type: ignore[no-untyped-def]
        sent.append(sql)
        return execute(sql, args)

    reader._execute = counted  # type: ignore[method-assign]
    return sent


def _same_outcomes(got: list, want: list) -> bool:
    """Inputs equal, exceptions of the same type and message."""
    return len(got) == len(want) and all(
        (type(g), str(g)) == (type(w), str(w)) if isinstance(w, Exception) else g == w
        for g, w in zip(got, want, strict=True)
    )


def _alone(reader: TaskReader, ids: list[int]) -> list:
    """Each task's own read: its inputs or its exception."""
    return [outcome_of(reader.inputs, i) for i in ids]


@postgres
@pytest.mark.parametrize("pg_reader", [False, True], ids=["plain", "with_store"], indirect=True)
def test_a_group_is_one_statement_that_reads_what_each_task_reads(
    pg_reader, history_frames
) -> None:
    ids = _ids(history_frames, 12)
    alone = [pg_reader.inputs(i) for i in ids]
    assert any(datasets for _, _, datasets in alone)  # the tasks have datasets to split
    sent = _counted(pg_reader)
    for _ in range(6):  # psycopg prepares the statement from the 5th run on
        with pg_reader.one_connection():
            assert pg_reader.inputs_many(ids) == alone
    assert len(sent) == 6 and all("ANY" in sql for sql in sent)
    assert pg_reader.inputs_many([ids[0]]) == alone[:1]  # a group of one: the task's own read
    assert pg_reader.inputs_many([ids[3], ids[3]]) == [alone[3], alone[3]]


@postgres
def test_a_missing_task_and_a_bad_record_are_their_own_outcomes(pg_reader, history_frames) -> None:
    ids = _ids(history_frames, 4)
    group = [ids[0], MISSING, ids[1], BAD, ids[2], ids[3]]
    sent = _counted(pg_reader)
    got = pg_reader.inputs_many(group)
    assert len(sent) == 1
    assert isinstance(got[1], TaskNotFound) and isinstance(got[3], BadTaskRecord)
    assert f"task {BAD}: jedi_taskparams.taskparams" in str(got[3])
    assert _same_outcomes(got, _alone(pg_reader, group))


@postgres
def test_a_failing_grouped_statement_falls_back_to_each_tasks_read(
    pg_reader, history_frames, caplog
) -> None:
    """A grouped statement the server refuses (here an id beyond BIGINT, or a broken
    statement) is followed by the per-task reads: each task its own answer or error."""
    ids = _ids(history_frames, 3)
    beyond = 2**70  # out of BIGINT's range: the grouped read fails, then this task's read
    group = [ids[0], beyond, ids[1], MISSING, ids[2]]
    want = _alone(pg_reader, group)
    sent = _counted(pg_reader)
    with pg_reader.one_connection():
        got = pg_reader.inputs_many(group)
    assert "ANY" in sent[0] and len(sent) == 1 + len(group)
    assert _same_outcomes(got, want) and isinstance(got[1], DatabaseUnavailable)
    assert isinstance(got[3], TaskNotFound) and all(isinstance(got[i], tuple) for i in (0, 2, 4))
    assert "reading them one by one" in caplog.text
    pg_reader._group_sql = "SELECT no_such_column FROM jedi_tasks"  # a driver error
    assert _same_outcomes(pg_reader.inputs_many(group), want)


@postgres
def test_a_dropped_connection_under_a_group_is_replaced_once(pg_reader, history_frames) -> None:
    ids = _ids(history_frames, 5)
    alone = [pg_reader.inputs(i) for i in ids]
    sent = _counted(pg_reader)
    with pg_reader.one_connection():
        assert pg_reader.inputs_many(ids) == alone
        pg_reader._local.raw.dbapi_connection.close()  # the server went away under it
        assert pg_reader.inputs_many(ids) == alone
    assert len(sent) == 2  # the retry is inside the one grouped read, not a fallback


def test_sqlite_reads_a_group_one_task_at_a_time(tmp_path, history_frames) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    load_into(make_engine(url), history_frames)
    _add_bad_task(make_engine(url))
    reader = TaskReader(make_engine(url, for_reads=True))
    group = [*_ids(history_frames, 3), MISSING, BAD]
    sent = _counted(reader)
    got = reader.inputs_many(group)
    assert len(sent) == len(group) and not any("ANY" in sql for sql in sent)
    assert _same_outcomes(got, _alone(reader, group))
    assert isinstance(got[3], TaskNotFound) and isinstance(got[4], BadTaskRecord)
