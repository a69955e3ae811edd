"""``scoutless online follow``: the job follower's loop, woken by job status messages.

panda-server publishes a job's status changes (``DBProxy.push_job_status_message``,
``msg_type`` ``job_status``) to its ``panda_jobstatus`` message-queue destination when the
job's specialHandling holds ``pc`` (JEDI sets it for a task with the ``pushStatusChanges``
split rule) and the server has an ``mq_configFile``. The messages carry no maxPSS and no
wall time, so a message is a trigger, not a record: a ``finished`` or ``failed`` one makes
the follower read the job tables at once (``JobFollower.poll``); with no messages it reads
them every ``poll_interval_s``.

A message is acked only after the poll it triggered committed (a crash leaves it to
redelivery; the ledger makes the second poll a no-op). A message that cannot be parsed
(not JSON, an id beyond int64, a timestamp from the future …) goes to the dead letter at
once (``panda/dead_letters.py``), never back into the loop. A database outage leaves the
messages unacked and backs off.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.jedi.messages import MalformedMessage, parse_job_status
from scoutless.panda import dead_letters
from scoutless.panda.broker import BrokerUnavailable, Frame, StompBroker
from scoutless.panda.job_follower import JobFollower

log = logging.getLogger("scoutless.panda.job_trigger")

#: the job statuses after which the job's row holds its outcome
ENDED = frozenset({"finished", "failed"})
#: the longest backoff after a database or broker outage (s)
MAX_BACKOFF_S = 30.0


class JobTrigger:
    """Polls the follower on each ended job's message and every ``poll_interval_s``."""

    def __init__(self, follower: JobFollower, broker: StompBroker | None) -> None:
        self.follower = follower
        self.broker = broker
        self.interval = follower.s.poll_interval_s
        self.counts = {"messages": 0, "triggers": 0, "dead_letters": 0, "polls": 0}
        dead_letters.create_dead_letter_table(follower.engine)

    def triage(self, frames: list[Frame]) -> tuple[bool, list[Frame]]:
        """Dead-letter the unreadable frames (acked at once); whether one says a job ended,
        and the frames left to ack once the poll committed."""
        ended, keep = False, []
        for frame in frames:
            self.counts["messages"] += 1
            try:
                msg = parse_job_status(frame.body)
            except MalformedMessage as exc:
                self._dead_letter(frame, f"malformed: {exc}")
                continue
            except Exception as exc:  # whatever a body can do to a parser
                self._dead_letter(frame, f"unreadable: {type(exc).__name__}: {exc}")
                continue
            ended |= msg.status in ENDED
            keep.append(frame)
        return ended, keep

    def _dead_letter(self, frame: Frame, why: str) -> None:
        dead_letters.record(
            self.follower.engine, kind="malformed", reason=why, body=frame.body, attempts=1,
            message_id=frame.headers.get("message-id"),
            destination=frame.headers.get("destination"),
        )  # fmt: skip
        log.error("dead letter (message %s): %s", frame.headers.get("message-id"), why)
        self.counts["dead_letters"] += 1
        if self.broker is not None:
            self.broker.ack(frame)

    def _frames(self, wait_s: float) -> list[Frame]:
        if self.broker is None:
            return []
        frames: list[Frame] = []
        try:
            # at most 1 s at a time: a stop (SIGTERM) is seen within a second
            frames.append(self.broker.frames.get(timeout=min(max(wait_s, 0.01), 1.0)))
            while len(frames) < 500:
                frames.append(self.broker.frames.get_nowait())
        except queue.Empty:
            pass
        return [f for f in frames if self.broker.current(f)]

    def run(self, stop: threading.Event, *, initial_backoff_s: float = 0.5) -> None:
        """Until ``stop``: messages in, polls out; never raises for a message or an outage."""
        last, delay = -float("inf"), initial_backoff_s
        pending: list[Frame] = []
        while not stop.is_set():
            broker = self.broker
            if (
                broker is not None
                and not broker.connected.is_set()
                and not broker.connect(initial_backoff_s, MAX_BACKOFF_S, stop)
            ):
                break
            wait = 0.0 if pending else self.interval - (time.monotonic() - last)
            if broker is None and wait > 0:  # polling alone: sleep till the next poll
                stop.wait(min(wait, 1.0))
            frames = pending + self._frames(wait)
            pending = []
            try:
                ended, frames = self.triage(frames)
                self.counts["triggers"] += int(ended)
                if ended or time.monotonic() - last >= self.interval:
                    self.follower.poll()
                    self.counts["polls"] += 1
                    last = time.monotonic()
                for frame in frames:
                    self.broker.ack(frame)  # type: ignore[union-attr]  # frames: a broker's
                delay = initial_backoff_s
            except Exception as exc:  # an outage, a value refused, a bug: keep them, back off
                if isinstance(exc, DatabaseUnavailable | BrokerUnavailable | OSError) or (
                    dead_letters.outage(exc)
                ):
                    log.error("outage, %d messages left unacked: %s", len(frames), exc)
                else:
                    log.exception("poll failed, %d messages left unacked: %r", len(frames), exc)
                pending = frames
                stop.wait(delay)
                delay = min(delay * 2, MAX_BACKOFF_S)
        if self.broker is not None:
            self.broker.close()
