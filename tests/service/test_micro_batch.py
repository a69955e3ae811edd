"""Requests of a few tasks are computed together (``service/micro_batch.py``): one model and
decision pass per loop turn, every answer the one its request gets alone, every request's
rows logged under its own id, and a failure in a group the failing request's alone."""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from scoutless.config import Settings
from scoutless.fast_paths import current
from scoutless.service.app import create_app
from scoutless.service.micro_batch import LoopBatcher
from scoutless.service.serving import ModelHolder

LOOPBACK = ("127.0.0.1", 50000)


def _task_ids(workdir: Path, n: int) -> list[int]:
    with sqlite3.connect(workdir / "history.sqlite") as con:
        rows = con.execute("SELECT jeditaskid FROM jedi_tasks ORDER BY jeditaskid LIMIT ?", (n,))
        return [int(r[0]) for r in rows]


def _without_timings(body: dict) -> dict:
    return {k: v for k, v in body.items() if k not in ("timings_ms", "request_id")}


def test_concurrent_requests_are_computed_together_and_answered_as_alone(
    demo_workdir, tmp_path
) -> None:
    """Twelve task-by-id requests at once on the cost policy (the shipped default: the
    value models and the cost grid): fewer groups than requests, the same answers as one by one,
    and each request's row in the prediction log under its own request id."""
    ids = _task_ids(demo_workdir, 12)
    log = tmp_path / "log.sqlite"
    app = create_app(demo_workdir / "bundle", db_url=f"sqlite:///{demo_workdir / 'history.sqlite'}",
                     log_db_url=f"sqlite:///{log}")  # fmt: skip

    async def main() -> tuple[list[dict], list[dict], LoopBatcher]:
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app, client=LOOPBACK)
            local = "http://127.0.0.1"
            async with httpx.AsyncClient(transport=transport, base_url=local) as client:

                def get(i: int, rid: str):  # fmt: skip
                    return client.get(
                        f"/v1/tasks/{i}/prediction?policy=cost", headers={"x-request-id": rid}
                    )

                together = await asyncio.gather(*[get(i, f"together-{i}") for i in ids])
                alone = [await get(i, f"alone-{i}") for i in ids]
            batcher = app.state.service.backend.batcher
            return [r.json() for r in together], [r.json() for r in alone], batcher

    together, alone, batcher = asyncio.run(main())
    assert [b["policy"] for b in together] == ["cost"] * len(ids)
    assert batcher.requests == 2 * len(ids)
    assert batcher.groups < 2 * len(ids) - 1  # the gathered ones shared a group
    for i, mine, single in zip(ids, together, alone, strict=True):
        assert mine["request_id"] == f"together-{i}"
        assert mine["tasks"][0]["jeditaskid"] == i and mine["tasks"][0]["index"] == 0
        assert _without_timings(mine) == _without_timings(single)
    with sqlite3.connect(log) as con:
        logged = dict(con.execute("SELECT request_id, jeditaskid FROM scoutless_task_predictions"))
    assert {f"together-{i}": i for i in ids}.items() <= logged.items()


def test_a_failing_request_fails_alone_and_its_group_is_answered(real_pipeline) -> None:
    pipeline, rows = real_pipeline
    batcher = LoopBatcher()
    run_many = pipeline.run_many

    def refuses_bad(prepared, request_ids, **kw):
        if "bad" in request_ids:
            raise ValueError("bad request")
        return run_many(prepared, request_ids, **kw)

    async def main() -> list:
        ask = [
            batcher.outcome(
                pipeline, pipeline.preprocess([row]), rid, targets=None, policy="argmax", alpha=0.05
            )
            for rid, row in zip(("a", "bad", "c"), rows, strict=False)
        ]
        return await asyncio.gather(*ask, return_exceptions=True)

    pipeline.run_many = refuses_bad
    try:
        a, bad, c = asyncio.run(main())
    finally:
        del pipeline.run_many
    assert isinstance(bad, ValueError)
    assert a.log_rows[0]["request_id"] == "a" and c.log_rows[0]["request_id"] == "c"
    assert batcher.groups == 4  # the group of three, then each request alone


def test_groups_hold_at_most_max_tasks_and_keep_each_request_whole(real_pipeline) -> None:
    pipeline, rows = real_pipeline
    batcher = LoopBatcher(max_tasks=3)

    async def main() -> list:
        sizes = (2, 2, 1, 3)
        ask = [
            batcher.outcome(
                pipeline,
                pipeline.preprocess(rows[:n]),
                f"r{k}",
                targets=["memory"],
                policy="argmax",
                alpha=0.05,
            )
            for k, n in enumerate(sizes)
        ]
        return await asyncio.gather(*ask)

    outcomes = asyncio.run(main())
    assert [len(o.tasks) for o in outcomes] == [2, 2, 1, 3]
    assert [list(o.tasks[0]["targets"]) for o in outcomes] == [["memory"]] * 4
    assert batcher.groups == 3  # [2], [2, 1], [3]


@pytest.mark.parametrize(("turns", "groups"), [(3, 1), (0, 3)])
def test_requests_of_the_next_turns_join_the_group(real_pipeline, turns, groups) -> None:
    """Requests reaching the batcher one loop turn after another share one group while each
    turn brings one (``gather_turns``; 0: each turn's requests alone), answered as alone."""
    pipeline, rows = real_pipeline
    batcher = LoopBatcher(gather_turns=turns)

    async def arriving(turn: int, row: dict) -> object:
        for _ in range(turn):  # this request reaches the batcher ``turn`` turns later
            await asyncio.sleep(0)
        prepared = pipeline.preprocess([row])
        return await batcher.outcome(pipeline, prepared, f"r{turn}", targets=None,
                                     policy="cost", alpha=0.05)  # fmt: skip

    async def main() -> list:
        return await asyncio.gather(*[arriving(k, row) for k, row in enumerate(rows)])

    outcomes = asyncio.run(main())
    assert batcher.groups == groups and batcher.requests == len(rows)
    for k, (outcome, row) in enumerate(zip(outcomes, rows, strict=True)):
        alone = pipeline.run_many([pipeline.preprocess([row])], [f"r{k}"], policy="cost")[0]
        assert outcome.tasks == alone.tasks


def test_a_lone_request_waits_one_turn_only(real_pipeline) -> None:
    """A turn that brings nothing ends the wait: a lone request is computed one loop turn
    later than without gathering, not ``gather_turns`` later."""
    pipeline, rows = real_pipeline

    async def turns_to_answer(batcher: LoopBatcher) -> int:
        task = asyncio.ensure_future(batcher.outcome(
            pipeline, pipeline.preprocess(rows[:1]), "lone", targets=None, policy="argmax",
            alpha=0.05,
        ))  # fmt: skip
        turns = 0
        while not task.done():
            await asyncio.sleep(0)
            turns += 1
        return turns

    waited = asyncio.run(turns_to_answer(LoopBatcher(gather_turns=3)))
    assert waited == asyncio.run(turns_to_answer(LoopBatcher(gather_turns=0))) + 1


@pytest.fixture(scope="module")
def real_pipeline(demo_workdir):
    from service_fakes import task

    holder = ModelHolder(demo_workdir / "bundle", targets=None, executor=ThreadPoolExecutor(2), settings=Settings())
    holder.load()
    assert holder.current is not None
    rows = [task(processingtype=p) for p in ("evgen", "simul", "reco")]
    return holder.current.pipeline, rows


def test_a_full_group_is_answered_as_each_request_alone(real_pipeline) -> None:
    """Up to the batcher's 64 tasks: a group past the size at which a model's trees would
    be left to XGBoost (whose softmax rounds otherwise) still walks them as one task does."""
    from service_fakes import task

    pipeline, _ = real_pipeline
    kinds = ("evgen", "simul", "reco", "deriv", "merge", "pile")
    rows = [task(processingtype=kinds[i % len(kinds)], corecount=float(1 + i % 8),
                 input_nevents=1000.0 * (1 + i)) for i in range(current().rows)]  # fmt: skip
    prepared = [pipeline.preprocess([row]) for row in rows]
    ids = [f"r{i}" for i in range(len(rows))]
    for policy in ("argmax", "cost"):
        together = pipeline.run_many(prepared, ids, policy=policy)
        alone = [
            pipeline.run_many([p], [i], policy=policy)[0]
            for p, i in zip(prepared, ids, strict=True)
        ]
        for mine, single in zip(together, alone, strict=True):
            assert repr(mine.tasks) == repr(single.tasks)
            assert repr(mine.log_rows) == repr(single.log_rows)


def test_a_group_waits_once_for_the_requests_being_read(real_pipeline) -> None:
    """Requests whose tasks are being read (``coming``) join the group of those already
    here when the reads are settled (``wake``), however many turns later; with no wake, the
    group is computed after ``HOLD_S``: it waits once only, though reads stay in flight."""
    pipeline, rows = real_pipeline
    reading = {"n": 0}
    batcher = LoopBatcher(coming=lambda: reading["n"])

    async def one(k: int) -> object:
        return await batcher.outcome(pipeline, pipeline.preprocess([rows[k]]), f"r{k}",
                                     targets=None, policy="argmax", alpha=0.05)  # fmt: skip

    async def read_then_join() -> list:
        reading["n"] = 2
        first = asyncio.ensure_future(one(0))
        for _ in range(20):  # many turns: the group waits for the reads, not for turns
            await asyncio.sleep(0)
        assert not first.done()
        reading["n"] = 0  # the reads settled: their requests are woken, then the batcher
        late = [asyncio.ensure_future(one(k)) for k in (1, 2)]
        batcher.wake()
        return await asyncio.gather(first, *late)

    outcomes = asyncio.run(read_then_join())
    assert batcher.groups == 1 and batcher.requests == 3
    for k, outcome in enumerate(outcomes):
        alone = pipeline.run_many([pipeline.preprocess([rows[k]])], [f"r{k}"], policy="argmax")
        assert outcome.tasks == alone[0].tasks

    async def never_woken() -> object:
        reading["n"] = 5  # reads that never settle (a stalled database server)
        return await asyncio.wait_for(one(0), timeout=60)  # held again and again: never

    assert asyncio.run(never_woken()).tasks == outcomes[0].tasks
    assert batcher.groups == 2
