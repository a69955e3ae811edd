"""Task reads from a database server go a loop turn's at a time (``service/task_fetch.py``):
one group per turn on one reader thread, at most one group in flight, every request back
together, and a read that fails fails its own request only."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from scoutless.history.panda_db import TaskNotFound
from scoutless.history.task_reader import outcome_of
from scoutless.service.task_fetch import LoopTaskFetch


class FakeReader:
    """Reads ``jeditaskid`` as its inputs; a missing id raises ``TaskNotFound``; each
    session records the ids read in it, on which thread."""

    def __init__(self, missing: set[int] = frozenset()) -> None:
        self.missing = missing
        self.sessions: list[list[int]] = []
        self.threads: set[str] = set()
        self.gate = threading.Event()
        self.gate.set()

    @contextmanager
    def one_connection(self) -> Iterator[None]:
        self.gate.wait(10)
        self.sessions.append([])
        yield

    def inputs(self, jeditaskid: int) -> tuple:
        self.threads.add(threading.current_thread().name)
        self.sessions[-1].append(jeditaskid)
        if jeditaskid in self.missing:
            raise TaskNotFound(jeditaskid)
        return ({"jeditaskid": jeditaskid}, {}, [])

    def inputs_many(self, jeditaskids: list[int]) -> list:
        """As ``TaskReader.inputs_many``: each read's inputs or its exception."""
        return [outcome_of(self.inputs, jeditaskid) for jeditaskid in jeditaskids]


def test_a_turns_reads_are_one_group_and_a_missing_task_fails_alone() -> None:
    reader = FakeReader(missing={2})
    fetch = LoopTaskFetch(reader)  # type: ignore[arg-type]

    async def main() -> list:
        return await asyncio.gather(*[fetch.inputs(i) for i in (1, 2, 3)], return_exceptions=True)

    one, two, three = asyncio.run(main())
    fetch.close()
    assert reader.sessions == [[1, 2, 3]] and fetch.groups == 1
    assert one[0][0] == {"jeditaskid": 1} and three[0][0] == {"jeditaskid": 3}
    assert isinstance(two, TaskNotFound)
    assert all(name.startswith("task-fetch") for name in reader.threads)


def test_reads_arriving_while_a_group_is_read_form_the_next_group() -> None:
    reader = FakeReader()
    fetch = LoopTaskFetch(reader)  # type: ignore[arg-type]

    async def main() -> list:
        reader.gate.clear()  # the first group is held on the reader thread
        first = asyncio.ensure_future(fetch.inputs(1))
        await asyncio.sleep(0.05)
        later = [asyncio.ensure_future(fetch.inputs(i)) for i in (2, 3)]
        await asyncio.sleep(0.05)
        assert fetch.groups == 1  # at most one group in flight: 2 and 3 wait for it
        reader.gate.set()
        return await asyncio.gather(first, *later)

    asyncio.run(main())
    fetch.close()
    assert reader.sessions == [[1], [2, 3]]


def test_a_failing_session_fails_every_request_of_its_group() -> None:
    class Broken(FakeReader):
        @contextmanager
        def one_connection(self) -> Iterator[None]:
            raise ConnectionError("no server")
            yield

    fetch = LoopTaskFetch(Broken())  # type: ignore[arg-type]

    async def main() -> list:
        return await asyncio.gather(*[fetch.inputs(i) for i in (1, 2)], return_exceptions=True)

    assert [type(r) for r in asyncio.run(main())] == [ConnectionError, ConnectionError]
    fetch.close()


@pytest.fixture(autouse=True)
def _no_leaked_threads() -> Iterator[None]:
    before = {t.name for t in threading.enumerate()}
    yield
    assert not {t.name for t in threading.enumerate()} - before


def test_the_reads_in_flight_are_counted_and_their_settling_told() -> None:
    """``in_flight`` is the group on the reader thread (what a model group waits for), and
    ``on_settled`` runs after each group's requests are settled, the next group sent."""
    reader = FakeReader()
    told: list[int] = []
    fetch = LoopTaskFetch(reader, on_settled=lambda: told.append(fetch.in_flight))  # type: ignore[arg-type]

    async def main() -> list:
        reader.gate.clear()
        first = asyncio.ensure_future(fetch.inputs(1))
        await asyncio.sleep(0.05)
        later = [asyncio.ensure_future(fetch.inputs(i)) for i in (2, 3)]
        await asyncio.sleep(0.05)
        assert fetch.in_flight == 1  # 2 and 3 wait for the group in flight
        reader.gate.set()
        return await asyncio.gather(first, *later)

    assert len(asyncio.run(main())) == 3
    fetch.close()
    assert told == [2, 0]  # the first group settled with (2, 3) sent; then none in flight
