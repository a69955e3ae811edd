"""The prediction log on PostgreSQL: a group commit of a few rows (the raw multi-row INSERT)
reads back as on SQLite, a refused request fails alone, and a dropped connection fails one
write and is replaced for the next."""

from __future__ import annotations

import asyncio
import os

import pytest
from sqlalchemy import create_engine, text

from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.ops.log_commit import LoopGroupCommit
from scoutless.ops.prediction_log import TABLE_NAME, PredictionLog

PG_URL = os.environ.get("SCOUTLESS_TEST_PG_URL")
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not PG_URL, reason="SCOUTLESS_TEST_PG_URL not set"),
]


def _row(request_id: str, **extra) -> dict:
    return {"request_id": request_id, "jeditaskid": 2**40 + 7, "model_version": "v1",
            "policy": "cost", "alpha": 0.05,
            "predictions": {"memory": {"class_id": 1, "class_label": "c1",
                                       "recommended_value": 2000.0, "probabilities": [0.2, 0.8]}},
            "features": '{"corecount": 8.0}', **extra}  # fmt: skip


@pytest.fixture
def logs(tmp_path):
    pg = PredictionLog(PG_URL)  # type: ignore[arg-type]
    with pg.engine.begin() as conn:
        conn.execute(text(f"DELETE FROM {TABLE_NAME}"))
    yield pg, PredictionLog(f"sqlite:///{tmp_path / 'log.sqlite'}")
    with pg.engine.begin() as conn:
        conn.execute(text(f"DELETE FROM {TABLE_NAME}"))
    pg.engine.dispose()


def test_a_few_rows_read_back_as_on_sqlite(logs) -> None:
    pg, lite = logs
    rows = [_row("a", arm=None), _row("b", jeditaskid=None, features=None, arm="predict"),
            _row("c", arm="scout")]  # fmt: skip
    assert pg.write(rows) == lite.write(rows) == 3
    assert _records(pg) == _records(lite)


def _records(log: PredictionLog) -> list[dict]:
    frame = log.read().drop(columns=["id", "created_at"])
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def test_a_refused_request_fails_alone_in_a_group_commit(logs) -> None:
    pg, _ = logs
    writer = LoopGroupCommit(pg)
    bad = _row("bad")
    del bad["predictions"]  # NOT NULL: the database refuses the transaction

    async def requests() -> list:
        rows = [[_row(f"r{i}")] for i in range(6)]
        rows.insert(3, [bad])
        out = await asyncio.gather(*(writer.committed(r) for r in rows), return_exceptions=True)
        await writer.close()
        return out

    out = asyncio.run(requests())
    assert isinstance(out.pop(3), DatabaseUnavailable)
    assert out == [1] * 6 and pg.count() == 6


def test_a_dropped_connection_fails_one_write_and_is_replaced(logs) -> None:
    pg, _ = logs
    pg.write([_row("before")])
    with pg.engine.connect() as conn:  # the pooled connection the next write takes
        pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
    other = create_engine(PG_URL)  # type: ignore[arg-type]
    with other.connect() as conn:  # the server ends it
        conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    other.dispose()
    results = []
    for request_id in ("first", "second"):
        try:
            results.append(pg.write([_row(request_id)]))
        except DatabaseUnavailable:
            results.append("failed")
    assert results[-1] == 1  # a fresh connection at the latest for the write after
    assert pg.count() == 1 + results.count(1)


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, bool]]:
    """What psycopg sends: each statement with the connection's autocommit, and COMMITs."""
    import psycopg

    calls: list[tuple[str, bool]] = []
    execute, commit = psycopg.Cursor.execute, psycopg.Connection.commit

    def recorded_execute(self, query, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append((str(query).split(" ", 1)[0], self.connection.autocommit))
        return execute(self, query, *args, **kwargs)

    def recorded_commit(self):  # type: ignore[no-untyped-def]
        calls.append(("COMMIT", self.autocommit))
        return commit(self)

    monkeypatch.setattr(psycopg.Cursor, "execute", recorded_execute)
    monkeypatch.setattr(psycopg.Connection, "commit", recorded_commit)
    return calls


def test_a_group_commit_is_one_statement_committed_when_it_returns(logs, sent) -> None:
    """One INSERT in autocommit, no BEGIN nor COMMIT round trip: its rows are committed
    (another connection sees them) when the write returns, and the pooled connection is
    back out of autocommit for the engine's transactions."""
    pg, _ = logs
    assert pg.write([_row(f"r{i}") for i in range(4)]) == 4
    assert sent == [("INSERT", True)]
    other = create_engine(PG_URL)  # type: ignore[arg-type]
    with other.connect() as conn:
        assert conn.execute(text(f"SELECT count(*) FROM {TABLE_NAME}")).scalar() == 4
    other.dispose()
    raw = pg.engine.raw_connection()
    assert raw.dbapi_connection.autocommit is False
    raw.close()
    with pg.engine.connect() as conn:  # a transaction still rolls back what it did
        conn.execute(text(f"DELETE FROM {TABLE_NAME}"))
        conn.rollback()
    assert pg.count() == 4


def test_a_refused_group_writes_none_of_its_rows(logs) -> None:
    """A bad row refuses the whole statement: no row of the group is committed (so the
    group commit's per-request retry writes nothing twice), and the connection serves
    the next write."""
    pg, _ = logs
    bad = _row("bad")
    del bad["predictions"]
    with pytest.raises(DatabaseUnavailable, match="predictions"):
        pg.write([_row("a"), _row("b"), bad])
    assert pg.count() == 0
    assert pg.write([_row("c")]) == 1 and pg.count() == 1


def test_a_write_on_a_dropped_connection_fails_and_the_next_gets_a_fresh_one(logs) -> None:
    """The server ended the pooled connection just before the write (no idle ping): that
    write fails as DatabaseUnavailable, writes nothing, and the next write, on a new
    connection, commits."""
    pg, _ = logs
    raw = pg.engine.raw_connection()
    pid = raw.dbapi_connection.info.backend_pid
    raw.close()
    other = create_engine(PG_URL)  # type: ignore[arg-type]
    with other.connect() as conn:
        conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    other.dispose()
    with pytest.raises(DatabaseUnavailable):
        pg.write([_row("lost")])
    assert pg.write([_row("next")]) == 1
    assert pg.read()["request_id"].tolist() == ["next"]
    raw = pg.engine.raw_connection()
    assert raw.dbapi_connection.info.backend_pid != pid
    assert raw.dbapi_connection.autocommit is False
    raw.close()
