"""The prediction log: write, filtered read-back, group commit and its failure path."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine

from scoutless.history import panda_db
from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.ops.log_commit import LoopGroupCommit
from scoutless.ops.prediction_log import LOG_COLUMNS, PredictionLog


def _entry(class_id: int = 1) -> dict:
    return {"class_id": class_id, "class_label": f"c{class_id}", "recommended_value": 2000.0,
            "probabilities": [0.2, 0.8]}  # fmt: skip


def _row(targets: tuple[str, ...] = ("memory",), version: str = "v1", request_id: str = "r1",
         **extra) -> dict:  # fmt: skip
    return {
        "request_id": request_id, "jeditaskid": 7, "model_version": version, "policy": "argmax",
        "predictions": {t: _entry() for t in targets}, "features": '{"corecount": 8.0}',
        **extra,
    }  # fmt: skip


def test_write_and_read_back_with_filters(tmp_path) -> None:
    """One row per task is written; readers get one row per task and target."""
    log = PredictionLog(f"sqlite:///{tmp_path / 'log.sqlite'}")
    old = datetime(2020, 1, 1)
    rows = [_row(("memory", "walltime")), _row(("walltime",), "v2"),
            _row(("io",), created_at=old, features=None)]  # fmt: skip
    assert log.write(rows) == 3
    frame = log.read()
    assert list(frame.columns) == LOG_COLUMNS
    assert frame["id"].tolist() == [1, 1, 2, 3]
    assert frame["target"].tolist() == ["memory", "walltime", "walltime", "io"]
    assert frame["features"].notna().tolist() == [True, False, True, False]  # once per task
    assert frame["class_label"].tolist() == ["c1"] * 4
    assert json.loads(frame["probabilities"][0]) == [0.2, 0.8]
    walltime = log.read(target="walltime")
    assert walltime["model_version"].tolist() == ["v1", "v2"]
    assert walltime["features"].notna().all()  # the task's first row in the filtered read
    assert log.read(model_version="v1")["target"].tolist() == ["memory", "walltime", "io"]
    recent = log.read(since=datetime.now(UTC) - timedelta(hours=1))
    assert recent["target"].tolist() == ["memory", "walltime", "walltime"]
    assert log.read(until=datetime(2021, 1, 1))["target"].tolist() == ["io"]
    assert log.count() == 3


def test_rows_of_the_earlier_per_target_table_are_read_first(tmp_path) -> None:
    """A database that logged before the per-task table keeps its history readable."""
    from scoutless.ops.prediction_log import legacy_table

    log = PredictionLog(f"sqlite:///{tmp_path / 'log.sqlite'}")
    legacy_table.create(log.engine)
    with log.engine.begin() as conn:
        conn.execute(legacy_table.insert(), [
            {"request_id": "old", "jeditaskid": 5, "model_version": "v0", "target": t,
             "class_id": 0, "class_label": "c0", "probabilities": "[1.0]",
             "recommended_value": None, "policy": "argmax", "features": None,
             "created_at": datetime(2025, 1, 1)} for t in ("memory", "io")
        ])  # fmt: skip
    log.write([_row(("memory",))])
    frame = log.read()
    assert frame["request_id"].tolist() == ["old", "old", "r1"]
    assert frame["target"].tolist() == ["memory", "io", "memory"]
    assert log.read(target="io")["request_id"].tolist() == ["old"]
    assert log.read(model_version="v1")["request_id"].tolist() == ["r1"]
    log.write([_row(("io",), jeditaskid=None), _row(("io",), jeditaskid=3)])
    assert log.task_ids() == [3, 5, 7]  # both tables, each id once, no NULL


def test_group_commit_resolves_each_request_after_its_commit(tmp_path) -> None:
    log = PredictionLog(f"sqlite:///{tmp_path / 'log.sqlite'}")
    writer = LoopGroupCommit(log)

    async def requests() -> list[int]:
        done = await asyncio.gather(
            *(writer.committed([_row(request_id=f"r{i}")] * 2) for i in range(50))
        )
        await writer.close()
        return done

    assert asyncio.run(requests()) == [2] * 50
    assert log.count() == 100
    assert writer.commits <= 50
    with pytest.raises(DatabaseUnavailable):
        asyncio.run(writer.committed([_row()]))


def test_write_failure_reaches_every_waiter(tmp_path) -> None:
    log = PredictionLog(f"sqlite:///{tmp_path / 'log.sqlite'}")
    writer = LoopGroupCommit(log)
    bad = _row()
    del bad["predictions"]  # NOT NULL column

    async def requests() -> int:
        with pytest.raises(DatabaseUnavailable, match="cannot write"):
            await writer.committed([bad])
        good = await writer.committed([_row()])
        await writer.close()
        return good

    assert asyncio.run(requests()) == 1


def test_unreachable_database_is_named(tmp_path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'missing' / 'log.sqlite'}")
    with pytest.raises(DatabaseUnavailable, match="scoutless_task_predictions"):
        PredictionLog(engine)


def _write_many(url: str, worker: int, n: int) -> None:
    log = PredictionLog(url)
    for i in range(n):
        log.write([_row(request_id=f"w{worker}-{i}")] * 4)


def test_writer_processes_take_turns_and_lose_nothing(tmp_path) -> None:
    """Service workers share one SQLite log: their commits take turns through the lock
    file instead of failing or sleeping on SQLite's busy handler."""
    import multiprocessing

    url = f"sqlite:///{tmp_path / 'log.sqlite'}"
    PredictionLog(url)  # the table exists before the writers start
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_write_many, args=(url, w, 60)) for w in range(3)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(120)
        assert process.exitcode == 0
    log = PredictionLog(url)
    assert log.count() == 3 * 60 * 4
    assert (tmp_path / "log.sqlite.write-lock").exists()


def test_writer_turn_is_exclusive_across_processes(tmp_path) -> None:
    import fcntl
    import os

    from scoutless.ops.prediction_log import WriterTurn

    turn = WriterTurn(str(tmp_path / "log.sqlite"))
    with turn.hold():
        other = os.open(turn.path, os.O_RDWR)  # another open file: as another process
        with pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released after the turn
    os.close(other)


def _create_together(urls: list[str], barrier) -> None:  # type: ignore[no-untyped-def]
    for url in urls:  # one fresh log per round, every worker released at once
        barrier.wait(60)
        PredictionLog(url)


def test_workers_creating_a_fresh_log_at_once_all_start(tmp_path) -> None:
    """Service workers start together on a fresh log: the losers of the check-then-create
    race must find the table, not fail their startup (which stopped the whole service).
    Three rounds, each on a fresh file; the same six processes race in each (a spawned
    process costs seconds to start: the race is in the creating, not the importing)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    urls = [f"sqlite:///{tmp_path / f'log{trial}.sqlite'}" for trial in range(3)]
    barrier = context.Barrier(6)
    creators = [context.Process(target=_create_together, args=(urls, barrier)) for _ in range(6)]
    for process in creators:
        process.start()
    for process in creators:
        process.join(120)
    assert [p.exitcode for p in creators] == [0] * 6
    for url in urls:
        assert PredictionLog(url).count() == 0


class _RacingCursor:
    """A cursor whose journal-mode switch loses the race ``losses`` times, as a worker's
    does while another worker switches the same fresh file."""

    def __init__(self, losses: int, error: str = "database is locked") -> None:
        self.losses, self.error, self.mode, self.switches = losses, error, "delete", 0

    def execute(self, sql: str):  # type: ignore[no-untyped-def]
        if self.losses:
            self.losses -= 1
            raise sqlite3.OperationalError(self.error)
        if sql.endswith("=WAL"):
            self.switches += 1
            self.mode = "wal"
        return self

    def fetchone(self) -> tuple[str]:
        return (self.mode,)


def test_switching_a_fresh_file_to_wal_retries_the_lost_race(monkeypatch) -> None:
    monkeypatch.setattr(panda_db, "WAL_RETRY_S", 0.0)
    racing = _RacingCursor(losses=3)
    panda_db.set_wal(racing)
    assert (racing.mode, racing.switches) == ("wal", 1)
    with pytest.raises(sqlite3.OperationalError, match="locked"):  # not forever
        panda_db.set_wal(_RacingCursor(losses=panda_db.WAL_ATTEMPTS))
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):  # other errors at once
        panda_db.set_wal(_RacingCursor(losses=1, error="disk I/O error"))


def test_a_file_already_in_wal_mode_is_left_alone(tmp_path) -> None:
    conn = sqlite3.connect(tmp_path / "log.sqlite")
    panda_db.set_wal(conn.cursor())
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    racing = _RacingCursor(losses=0)
    racing.mode = "wal"
    panda_db.set_wal(racing)
    assert racing.switches == 0


_TARGETS = ("memory", "cputime", "io", "walltime")


@st.composite
def _task_rows(draw) -> list[dict]:  # type: ignore[no-untyped-def]
    rows = []
    for n in range(draw(st.integers(1, 6))):
        targets = draw(st.lists(st.sampled_from(_TARGETS), min_size=1, max_size=4, unique=True))
        predictions = {}
        for t in targets:
            k = draw(st.integers(2, 5))
            raw = draw(st.lists(st.floats(0.01, 1.0), min_size=k, max_size=k))
            predictions[t] = {
                "class_id": draw(st.integers(0, k - 1)),
                "class_label": draw(st.text(min_size=1, max_size=8)),
                "recommended_value": draw(st.one_of(st.none(), st.floats(0, 1e6))),
                "probabilities": [p / sum(raw) for p in raw],
            }
        rows.append({"request_id": f"r{n}", "jeditaskid": draw(st.one_of(st.none(), st.integers(0, 2**40))),
                     "model_version": "v1", "policy": "argmax", "predictions": predictions,
                     "features": draw(st.one_of(st.none(), st.just('{"corecount": 8.0}')))})  # fmt: skip
    return rows


@settings(max_examples=40, deadline=None)
@given(rows=_task_rows())
def test_what_is_written_per_task_reads_back_per_target(tmp_path_factory, rows) -> None:
    """Every (task, target) decision written comes back once, with its values, in order."""
    log = PredictionLog(f"sqlite:///{tmp_path_factory.mktemp('log') / 'log.sqlite'}")
    log.write(rows)
    back = log.read()
    expected = [(r["request_id"], t, e) for r in rows for t, e in r["predictions"].items()]
    assert len(back) == len(expected)
    for (_, got), (request_id, target, entry) in zip(back.iterrows(), expected, strict=True):
        assert (got["request_id"], got["target"]) == (request_id, target)
        assert (got["class_id"], got["class_label"]) == (entry["class_id"], entry["class_label"])
        assert json.loads(got["probabilities"]) == entry["probabilities"]
        value = got["recommended_value"]
        assert (value is None or value != value) if entry["recommended_value"] is None else (
            value == entry["recommended_value"])  # fmt: skip
    firsts = back.drop_duplicates("id")
    assert back["features"].notna().sum() == sum(r["features"] is not None for r in rows)
    assert firsts["jeditaskid"].isna().sum() == sum(r["jeditaskid"] is None for r in rows)
