"""Group commit of the prediction log: many requests' rows, one transaction.

Concurrent requests are group-committed by :class:`LoopGroupCommit` (led from the event
loop, committed on one writer thread), which keeps the commit rate low under load without
weakening the guarantee: each request waits for the commit holding its rows. :func:`commit_group` isolates a refused
request so it fails alone, never its neighbours.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.ops.prediction_log import PredictionLog
from scoutless.ops.turn_groups import LoopTurnGroups

#: rows of one request and what its caller waits on (a thread's or the event loop's future)
Waiter = tuple[list[dict[str, Any]], "Future[int] | asyncio.Future[int]"]


def commit_group(
    log: PredictionLog, batch: list[Waiter], settle: Callable[[Any, Any], None] | None = None
) -> int:
    """Commit the rows of several requests in one transaction and settle each one's future;
    if that fails, each request's rows alone, so one request's bad row fails that request
    only, never its neighbours. Returns the number of commits."""
    settle = settle or _settle
    try:
        log.write([r for rows, _ in batch for r in rows])
    except Exception as exc:  # every waiter must hear of the failure
        if len(batch) == 1:
            settle(batch[0][1], exc)
            return 0
        return sum(_commit_one(log, rows, future, settle) for rows, future in batch)
    for rows, future in batch:
        settle(future, len(rows))
    return 1


def _commit_one(
    log: PredictionLog, rows: list[dict[str, Any]], future: Any, settle: Callable[[Any, Any], None]
) -> int:
    try:
        log.write(rows)
    except Exception as exc:
        settle(future, exc)
        return 0
    settle(future, len(rows))
    return 1


class LoopGroupCommit(LoopTurnGroups[Waiter]):
    """Group commit led from the event loop, committed on one writer thread.

    Requests' rows gather on the loop while a commit is in flight; when it ends, the next
    commit takes everything gathered (the leader takes all that is queued), so at most one
    commit is in flight and groups grow with the load. One thread hop each way per group,
    not per request: the writer settles a whole group with one wake-up of the loop, and
    each request is answered only once its rows are committed (or failed alone: item 2's
    isolation, :func:`commit_group`).
    """

    def __init__(self, log: PredictionLog) -> None:
        super().__init__("prediction-log")
        self.log = log
        self.commits = 0
        self.groups = 0  # groups taken by the writer (a commit each, or one per request
        self.requests = 0  # when the group's failed) and the requests in them
        self._closed = False

    async def committed(self, rows: list[dict[str, Any]]) -> int:
        """Wait until ``rows`` are committed; :class:`DatabaseUnavailable` once closed (a
        request after shutdown must not wait on a writer that is gone)."""
        if self._closed:
            raise DatabaseUnavailable("prediction log writer is closed")
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._join((rows, future))  # this loop turn's other requests join the first commit
        return await future

    def _work(self, batch: list[Waiter], loop: asyncio.AbstractEventLoop) -> None:
        """On the writer thread: commit, then hand every outcome back to the loop at once."""
        outcomes: list[tuple[Any, int | BaseException]] = []
        self.groups += 1
        self.requests += len(batch)
        try:
            self.commits += commit_group(self.log, batch, lambda f, o: outcomes.append((f, o)))
        except BaseException as exc:  # never leave a waiter hanging
            outcomes = [(future, exc) for _, future in batch]
        loop.call_soon_threadsafe(self._settled, outcomes, loop)

    def _settled(self, outcomes: list[tuple[Any, int | BaseException]], loop: Any) -> None:
        for future, outcome in outcomes:
            _settle(future, outcome)
        self._lead(loop)

    async def close(self) -> None:
        """Wait for what is pending and in flight (a graceful shutdown loses nothing)."""
        self._closed = True
        while self._leading or self._pending:
            await asyncio.sleep(0.01)
        self._thread.shutdown(wait=True)


def _settle(future: Future[int] | asyncio.Future[int], outcome: int | BaseException) -> None:
    if isinstance(future, Future):
        if not future.set_running_or_notify_cancel():
            return
    elif future.done():  # its request was cancelled (the client went away)
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
