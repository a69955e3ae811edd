"""Group commit isolates callers: a request whose rows the database refuses fails alone,
its neighbours in the same transaction are committed; the SQLite log's durability level."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.ops.log_commit import LoopGroupCommit
from scoutless.ops.prediction_log import PredictionLog


def _row(request_id: str, **extra) -> dict:
    return {"request_id": request_id, "jeditaskid": 7, "model_version": "v1", "policy": "argmax",
            "predictions": {"memory": {"class_id": 1, "class_label": "c1",
                                       "recommended_value": 2000.0, "probabilities": [0.2, 0.8]}},
            "features": "{}", **extra}  # fmt: skip


def test_the_sqlite_log_commits_at_the_chosen_level(tmp_path) -> None:
    default = PredictionLog(f"sqlite:///{tmp_path / 'a.sqlite'}")
    full = PredictionLog(f"sqlite:///{tmp_path / 'b.sqlite'}", synchronous="FULL")
    for log, level in ((default, 1), (full, 2)):  # NORMAL, FULL
        with log.engine.connect() as conn:
            assert conn.execute(text("PRAGMA synchronous")).scalar() == level


def test_the_loop_group_commit_groups_requests_and_isolates_a_refused_one(tmp_path) -> None:
    """The service's writer: concurrent requests share commits (fewer commits than
    requests), each answered after its rows are in; a refused row fails its request only."""
    log = PredictionLog(f"sqlite:///{tmp_path / 'log.sqlite'}")
    writer = LoopGroupCommit(log)
    bad = _row("bad")
    del bad["predictions"]  # NOT NULL: the database refuses the whole transaction

    async def requests() -> tuple[list, int, list]:
        first = await asyncio.gather(*(writer.committed([_row(f"a-{i}")] * 2) for i in range(40)))
        commits = writer.commits
        rows = [[_row(f"b-{i}")] for i in range(10)]
        rows.insert(5, [bad])
        second = await asyncio.gather(*(writer.committed(r) for r in rows),
                                      return_exceptions=True)  # fmt: skip
        await writer.close()
        return first, commits, second

    first, commits, second = asyncio.run(requests())
    assert first == [2] * 40
    assert commits == 1  # the 40 concurrent requests: one transaction
    assert isinstance(second.pop(5), DatabaseUnavailable)
    assert second == [1] * 10
    assert log.count() == 90
