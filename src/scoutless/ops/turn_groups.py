"""Work gathered on the event loop and done a group at a time on one worker thread.

The prediction log's group commit (:mod:`.log_commit`) and the service's task reads
(:mod:`scoutless.service.task_fetch`) share it: the first item of a loop turn schedules a
lead; the lead hands everything gathered to the worker thread, so at most one group is in
flight and groups grow with the load; the worker settles its whole group with one wake-up
of the loop, whose callback leads the next group. One thread hop each way per group, not
per item.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

W = TypeVar("W")


class LoopTurnGroups(Generic[W]):
    """Subclasses do a group's work in :meth:`_work` (on the worker thread) and, back on
    the loop, end the callback that settles it with :meth:`_lead`."""

    def __init__(self, thread_name: str) -> None:
        self._pending: list[W] = []
        self._leading = False
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=thread_name)
        self.in_flight = 0  # items of the group on the worker now

    def _join(self, item: W) -> None:
        """Queue ``item`` (on the loop); the first of a loop turn schedules the lead, so
        the turn's other items join its group."""
        self._pending.append(item)
        if not self._leading:
            self._leading = True
            loop = asyncio.get_running_loop()
            loop.call_soon(self._lead, loop)

    def _lead(self, loop: asyncio.AbstractEventLoop) -> None:
        """Hand all that is gathered to the worker, or stop leading if nothing is."""
        group, self._pending = self._pending, []
        self.in_flight = len(group)
        if not group:
            self._leading = False
            return
        self._thread.submit(self._work, group, loop)

    def _work(self, group: list[W], loop: asyncio.AbstractEventLoop) -> None:
        """On the worker thread: the group's work, then one ``call_soon_threadsafe``."""
        raise NotImplementedError
