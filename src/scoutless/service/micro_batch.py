"""Requests of a few tasks computed together: the models and decisions once per loop turn.

A request of a few tasks is prepared (validated, encoded) in its own handler, then waits
here; the requests that reach this point during one turn of the event loop (those that
arrived while the previous group was computed) go through ``Pipeline.run_many`` in one
call. A group waits up to ``gather_turns`` more loop turns while each turn brings it
another request: a turn reads the sockets once more, and the requests that landed while
the last group was computed or committed join this one, so a busy service's groups grow
(``scoutless_groups_total`` in ``/metrics`` counts them); a turn that brings nothing ends
the wait, so an idle service answers a lone request at once. Requests whose tasks are being read
from a database server (``task_fetch.LoopTaskFetch``) come back a group at a time, many
turns later: a group then waits for the reads in flight once more, until they are settled
(:meth:`LoopBatcher.wake`) or ``HOLD_S`` has passed. Without that wait, reads that come
back one by one would make groups of one request, each paying alone the fixed cost a
group shares.

Most of a single task's CPU is the fixed cost of each numpy and model call (four
targets' classes, their value models, the cost policy's grid), so a group pays it once,
not once per request. Every step is row by row, so a task's answer is the one it gets
alone (bit for bit with tree models; with the DNN champion to float32 rounding, as in any
batch: its matrix products sum in another order for another number of rows). A group
that fails is computed again request by request, so one request's failure
is its own, never its neighbours' (as the group commit isolates its rows).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import NamedTuple

from scoutless.fast_paths import current
from scoutless.service.answers import Outcome
from scoutless.service.pipeline import Pipeline
from scoutless.service.request_input import Prepared

#: loop turns a group may wait while each brings it more requests (``LoopBatcher``)
GATHER_TURNS = 3
#: seconds a group may wait for the requests whose tasks are being read (a stalled
#: database server delays the others' answers no longer than this)
HOLD_S = 0.005


class _Waiting(NamedTuple):
    prepared: Prepared
    request_id: str
    future: asyncio.Future[Outcome]


class _Group(NamedTuple):
    """What requests must share to be computed together (a tuple: a dict key hashed and
    compared in C, where a frozen dataclass's ``__init__``, ``__hash__`` and ``__eq__`` run
    Python code for every request)."""

    pipeline: Pipeline  # the model served when each was prepared (a reload splits groups)
    targets: tuple[str, ...] | None
    policy: str
    alpha: float
    layout: str


class LoopBatcher:
    """Gathers prepared requests during a loop turn and computes each group at its end.

    ``max_tasks`` bounds a group (unset: the models' small path, ``FastPaths.rows``,
    so that a group of small requests stays on it); ``gather_turns`` the loop turns a group may wait for more requests;
    ``groups`` and ``requests`` count what was computed (a group of one included);
    ``coming`` says how many requests are on their way (their tasks being read), which a
    group waits for once, until :meth:`wake` or ``HOLD_S``."""

    def __init__(
        self,
        max_tasks: int | None = None,
        gather_turns: int = GATHER_TURNS,
        coming: Callable[[], int] | None = None,
    ) -> None:
        self.max_tasks = max(1, current().rows if max_tasks is None else max_tasks)
        self.gather_turns = max(0, gather_turns)
        self.coming = coming
        self.groups = 0
        self.requests = 0
        self._pending: dict[_Group, list[_Waiting]] = {}
        self._scheduled = False
        self._tasks = 0  # tasks pending
        self._turns = 0  # turns waited by the pending requests
        self._seen = 0  # tasks pending at the last look
        self._held: asyncio.TimerHandle | None = None  # waiting for the reads in flight
        self._was_held = False  # the pending requests waited for reads once already

    async def outcome(
        self,
        pipeline: Pipeline,
        prepared: Prepared,
        request_id: str,
        *,
        targets: Sequence[str] | None,
        policy: str,
        alpha: float,
        layout: str = "tasks",
    ) -> Outcome:
        """This request's outcome, computed with the others of this loop turn."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Outcome] = loop.create_future()
        group = _Group(pipeline, tuple(targets) if targets else None, policy, alpha, layout)
        self._pending.setdefault(group, []).append(_Waiting(prepared, request_id, future))
        self._tasks += len(prepared.features)
        if not self._scheduled:  # after the handlers that are ready now have run
            self._scheduled = True
            loop.call_soon(self._flush)
        return await future

    def wake(self) -> None:
        """The reads a group waits for are settled: their requests join it (their handlers
        run first, woken before this), then the group is computed."""
        if self._held is not None:
            self._held.cancel()
            self._held = None
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._held = None
        tasks = self._tasks
        if self._turns < self.gather_turns and self._seen < tasks < self.max_tasks:
            self._turns, self._seen = self._turns + 1, tasks  # one more turn: more may come
            asyncio.get_running_loop().call_soon(self._flush)
            return
        coming = self.coming() if self.coming is not None and not self._was_held else 0
        if coming and tasks + coming <= self.max_tasks:  # wait for them once (wake)
            self._was_held, self._seen = True, tasks
            self._held = asyncio.get_running_loop().call_later(HOLD_S, self._flush)
            return
        self._scheduled, self._tasks, self._turns, self._seen = False, 0, 0, 0
        self._was_held = False
        pending, self._pending = self._pending, {}
        for group, waiting in pending.items():
            for part in _parts(waiting, self.max_tasks):
                self._compute(group, part)

    def _compute(self, group: _Group, waiting: list[_Waiting]) -> None:
        live = [w for w in waiting if not w.future.done()]  # cancelled: the client left
        if not live:
            return
        try:
            outcomes = self._run(group, live)
        except Exception as exc:
            if len(live) == 1:
                live[0].future.set_exception(exc)
                return
            for one in live:  # each request's own failure, or its answer
                try:
                    one.future.set_result(self._run(group, [one])[0])
                except Exception as own:
                    one.future.set_exception(own)
            return
        for one, outcome in zip(live, outcomes, strict=True):
            one.future.set_result(outcome)

    def _run(self, group: _Group, waiting: list[_Waiting]) -> list[Outcome]:
        self.groups += 1
        self.requests += len(waiting)
        return group.pipeline.run_many(
            [w.prepared for w in waiting],
            [w.request_id for w in waiting],
            targets=group.targets,
            policy=group.policy,
            alpha=group.alpha,
            layout=group.layout,
        )


def _parts(waiting: list[_Waiting], max_tasks: int) -> list[list[_Waiting]]:
    """``waiting`` in order, in parts of at most ``max_tasks`` tasks (a request whole)."""
    parts: list[list[_Waiting]] = [[]]
    tasks = 0
    for one in waiting:
        n = len(one.prepared.features)
        if parts[-1] and tasks + n > max_tasks:
            parts.append([])
            tasks = 0
        parts[-1].append(one)
        tasks += n
    return parts
