"""Pooled connections are pinged before use only after being idle (``panda_db.ping_when_idle``):
none in steady use, one after an idle spell, and a connection failing its ping is replaced."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from scoutless.history import panda_db


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(panda_db.time, "monotonic", lambda: now[0])
    return now


def test_pinged_only_after_idle_and_replaced_when_dead(tmp_path: Path, clock, monkeypatch) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'x.sqlite'}")
    panda_db.ping_when_idle(engine, idle_s=5.0)
    pings: list[object] = []
    dead = {"on": False}

    def ping(dbapi_conn: object) -> bool:
        pings.append(dbapi_conn)
        if dead["on"]:
            raise RuntimeError("server closed the connection")
        return True

    monkeypatch.setattr(engine.dialect, "do_ping", ping)

    def use() -> object:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT 1")).scalar() == 1
            return conn.connection.dbapi_connection

    first = use()  # a new connection: nothing to ping
    clock[0] += 1.0
    assert use() is first and pings == []  # in steady use: no ping
    clock[0] += 10.0
    assert use() is first and pings == [first]  # idle: pinged, alive, kept
    clock[0] += 10.0
    dead["on"] = True
    replaced = use()  # idle and dead: replaced before use, the statement runs
    assert pings[-1] is first and replaced is not first
    engine.dispose()
