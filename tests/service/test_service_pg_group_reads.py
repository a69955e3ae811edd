"""The service by id on PostgreSQL reads a loop turn's tasks in one statement
(``TaskReader.inputs_many``): concurrent requests are answered as each is alone, and a
missing task or a bad record among them is its own request's 404 or 422."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import httpx
import pandas as pd
import pytest
from service_fakes import TOKEN, FakePredictor, store_task
from sqlalchemy import text

from scoutless.history.db_write import write_frame
from scoutless.history.panda_db import make_engine
from scoutless.history.schema import metadata
from scoutless.service.app import create_app

PG_URL = os.environ.get("SCOUTLESS_TEST_PG_URL")
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not PG_URL, reason="SCOUTLESS_TEST_PG_URL not set"),
]
GOOD, MISSING, BAD = list(range(701, 709)), 799, 798


@pytest.fixture
def pg_tasks() -> Iterator[str]:
    """PostgreSQL holding the good tasks (with datasets) and one with bad parameters."""
    engine = make_engine(PG_URL)  # type: ignore[arg-type]
    metadata.drop_all(engine)
    for jeditaskid in [*GOOD, BAD]:
        store_task(PG_URL, jeditaskid)  # type: ignore[arg-type]
    day = pd.Timestamp("2026-01-01")
    datasets = [{"jeditaskid": i, "datasetid": d, "datasetname": f"ds{i}.{d}", "type": "input",
                 "creationtime": day, "modificationtime": day, "nfiles": 10 * d + i % 7,
                 "nevents": 1000 * d}
                for i in GOOD for d in range(1, 1 + i % 3)]  # fmt: skip
    write_frame(engine, "jedi_datasets", pd.DataFrame(datasets))
    with engine.begin() as conn:
        conn.execute(text("UPDATE jedi_taskparams SET taskparams = '[1]' WHERE jeditaskid = :i"),
                     {"i": BAD})  # fmt: skip
    yield PG_URL  # type: ignore[misc]
    metadata.drop_all(engine)
    engine.dispose()


def _answer(response: httpx.Response) -> tuple[int, dict]:
    body = response.json()
    return response.status_code, {k: v for k, v in body.items()
                                  if k not in ("timings_ms", "request_id", "error_id")}  # fmt: skip


def test_concurrent_reads_are_one_statement_and_answer_as_alone(pg_tasks, tmp_path, settings):
    app = create_app(predictor=FakePredictor(), db_url=pg_tasks, settings=settings,
                     log_db_url=f"sqlite:///{tmp_path / 'log.sqlite'}")  # fmt: skip
    ids = [GOOD[0], GOOD[1], MISSING, GOOD[2], BAD, *GOOD[3:]]
    groups: list[list[int]] = []
    rows_read: dict[int, list] = {}

    async def main() -> tuple[list, list]:
        async with app.router.lifespan_context(app):
            reader = app.state.service.backend.reader
            group_rows = reader.group_rows

            def spied(ids: list[int]) -> dict[int, list]:
                groups.append(list(ids))
                rows_read.update(found := group_rows(ids))
                return found

            reader.group_rows = spied
            transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
            auth = {"Authorization": f"Bearer {TOKEN}"}
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1",
                                         headers=auth) as client:  # fmt: skip
                url = "/v1/tasks/{}/prediction?targets=memory,io"
                together = await asyncio.gather(*[client.get(url.format(i)) for i in ids])
                alone = [await client.get(url.format(i)) for i in ids]
        return together, alone

    together, alone = asyncio.run(main())
    assert max(len(g) for g in groups) > 1  # requests gathered in one grouped statement
    assert sum(len(g) for g in groups) == len(ids)  # the ones alone read on their own
    assert [_answer(r) for r in together] == [_answer(r) for r in alone]
    statuses = [r.status_code for r in together]
    assert statuses == [200, 200, 404, 200, 422, *[200] * len(GOOD[3:])]
    assert str(MISSING) in together[2].text
    assert max(len(rows) for rows in rows_read.values()) == 2  # a task's datasets, split
