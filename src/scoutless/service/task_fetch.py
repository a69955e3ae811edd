"""Task reads from a database server, grouped: one thread hop for the reads of a loop turn.

``GET /v1/tasks/{id}/prediction`` on a database server waits on a round trip, so the read
leaves the event loop. One hop per request (a pool thread, a future, a wake-up of the
loop) cost about as much CPU as the read itself under load, and requests came back at
scattered moments, each too late for the model group (``LoopBatcher``) of the others.
Here the reads gathered while the previous group was being read go to the database
together, on one reader thread, in one statement (``TaskReader.inputs_many``): one hop each
way per group, at most one group in flight (groups grow with the load, as in the
prediction log's group commit), and every request of a group is back on the loop in the
same turn, so they reach the model group together. Each read succeeds or fails on its
own: a missing task is its request's 404, never its neighbours'.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from scoutless.history.task_reader import TaskInputs, TaskReader
from scoutless.ops.turn_groups import LoopTurnGroups

#: a request's task id and what its handler awaits
_Waiting = tuple[int, "asyncio.Future[tuple[TaskInputs, float]]"]


class LoopTaskFetch(LoopTurnGroups[_Waiting]):
    """Reads tasks by id for the event loop, a group at a time on one thread."""

    def __init__(self, reader: TaskReader, on_settled: Callable[[], None] | None = None) -> None:
        super().__init__("task-fetch")
        self.reader = reader
        self.on_settled = on_settled  # after a group's requests are woken (``LoopBatcher.wake``)
        self.groups = 0
        self.reads = 0

    async def inputs(self, jeditaskid: int) -> tuple[TaskInputs, float]:
        """The task's inputs (``TaskReader.inputs``, its errors raised here) and the time
        its group's reads took, in ms."""
        future: asyncio.Future[tuple[TaskInputs, float]] = (
            asyncio.get_running_loop().create_future()
        )
        self._join((jeditaskid, future))
        return await future

    def _work(self, group: list[_Waiting], loop: asyncio.AbstractEventLoop) -> None:
        """On the reader thread: every read of the group, then one wake-up of the loop."""
        self.groups += 1
        self.reads += len(group)
        start = time.perf_counter()
        outcomes: list[Any] = []
        try:
            with self.reader.one_connection():  # each outcome a task's inputs or its error
                outcomes = list(self.reader.inputs_many([jeditaskid for jeditaskid, _ in group]))
        except BaseException as exc:  # never leave a request waiting
            outcomes += [exc] * (len(group) - len(outcomes))
        ms = (time.perf_counter() - start) * 1e3
        loop.call_soon_threadsafe(self._settle, group, outcomes, ms, loop)

    def _settle(
        self, group: list[_Waiting], outcomes: list[Any], ms: float, loop: asyncio.AbstractEventLoop
    ) -> None:
        for (_, future), outcome in zip(group, outcomes, strict=True):
            if future.done():  # its request was cancelled (the client went away)
                continue
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result((outcome, ms))
        self._lead(loop)
        if self.on_settled is not None:
            self.on_settled()

    def close(self) -> None:
        self._thread.shutdown(wait=True)
