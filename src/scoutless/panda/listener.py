"""``scoutless listen``: a task's ``defined`` message in, a scout_prediction out.

Per batch of messages (whatever the broker has delivered, up to ``batch_max``):

1. triage: other message types, other statuses and messages older than ``max_age_s``
   are logged, counted and acked (handled: nothing to do); a malformed one (not JSON, an
   id beyond int64, a timestamp beyond the clock skew …) goes to the dead letter at once;
2. idempotency: a (task, model version) already published is a duplicate (acked); one
   committed but not confirmed is published again from the stored message;
3. the DB path: the tasks' submission-time features are read with the training code
   (``read_history(...).features()``) and predicted by the bundle's pipeline;
4. the prediction-log rows and the outbox rows are committed in one transaction;
5. the messages are published and the broker's receipts awaited; only then are the
   task_status messages acked (client-individual).

A database outage leaves the batch unacked and retries it with backoff; a broker error
drops the batch (the broker redelivers what was not acked) and reconnects with backoff.
Any other failure (a value the database refuses, a bug a message triggers) is the
messages': the batch is retried one task at a time at once, so the good messages in it go
through, and each message that failed is retried in the next batch until it has failed
``dead_letter_after`` times; then it goes to the dead letter (panda/dead_letters.py).
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence

from sqlalchemy import Engine

from scoutless.config import ListenerSettings
from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.jedi.messages import (
    MalformedMessage,
    message_type,
    parse_task_status,
)
from scoutless.ops.promise import Recalibration
from scoutless.panda import dead_letters, outbox
from scoutless.panda.broker import BrokerUnavailable, Frame, StompBroker
from scoutless.panda.prediction import Batch, TaskPredictor
from scoutless.panda.telemetry import ListenerMetrics
from scoutless.service.pipeline import Pipeline

log = logging.getLogger("scoutless.panda.listener")

DEFINED = "defined"


class TaskListener:
    def __init__(
        self,
        pipeline: Pipeline,
        engine: Engine,
        broker: StompBroker,
        settings: ListenerSettings,
        metrics: ListenerMetrics | None = None,
        calibration: Callable[[], Recalibration | None] | None = None,
    ) -> None:
        """Delivery around a :class:`TaskPredictor` (which ``calibration`` is handed to)."""
        self.pipeline = pipeline
        self.broker = broker
        self.engine = engine
        self.settings = settings
        self.metrics = metrics or ListenerMetrics()
        self.alive = threading.Event()
        #: failed attempts per message (by its body's digest: a redelivery keeps it)
        self.attempts: dict[str, int] = {}
        outbox.create_outbox(engine)
        dead_letters.create_dead_letter_table(engine)
        for kind, n in dead_letters.counts(engine).items():
            self.metrics.dead_letters_stored.labels(kind).set(n)
        self.predictor = TaskPredictor(pipeline, engine, settings, self.metrics, calibration)

    # -- one batch -----------------------------------------------------------------------------
    def triage(self, frames: Sequence[Frame], now: float) -> Batch:
        batch = Batch()
        for frame in frames:
            try:
                kind = message_type(frame.body)
                if kind != "task_status":
                    self._drop(batch, frame, "ignored_type", f"msg_type={kind!r}")
                    continue
                msg = parse_task_status(
                    frame.body, now=now, max_skew_s=self.settings.max_clock_skew_s
                )
            except MalformedMessage as exc:
                batch.malformed.append((frame, f"malformed: {exc}"))
                continue
            except Exception as exc:  # whatever a body can do to a parser
                batch.malformed.append((frame, f"unreadable: {type(exc).__name__}: {exc}"))
                continue
            if msg.status != DEFINED:
                self._drop(batch, frame, "ignored_status", f"task {msg.task_id} {msg.status}")
            elif now - msg.timestamp > self.settings.max_age_s:
                self._drop(
                    batch, frame, "stale", f"task {msg.task_id}, {now - msg.timestamp:.0f} s old"
                )
            else:
                if msg.task_id in batch.tasks:
                    self.metrics.count("duplicate")
                batch.tasks[msg.task_id].append(frame)
                batch.received.setdefault(msg.task_id, msg.timestamp)
        return batch

    def _drop(
        self, batch: Batch, frame: Frame, outcome: str, why: str, level: int = logging.DEBUG
    ) -> None:
        log.log(level, "%s: %s (message %s)", outcome, why, frame.headers.get("message-id"))
        self.metrics.count(outcome)
        batch.done.append(frame)

    def handle(self, frames: Sequence[Frame]) -> list[Frame]:
        """Handle one batch; returns the frames to retry with the next batch (a failure that
        was the messages'). Raises DatabaseUnavailable / BrokerUnavailable (an outage:
        nothing acked). Frames the broker delivers again go one at a time (see
        :meth:`_handle_redelivered`); every ack waits for the end."""
        again = [f for f in frames if f.headers.get("redelivered") == "true"]
        finished: list[tuple[Batch, dict[int, str]]] = []
        fresh = [f for f in frames if f.headers.get("redelivered") != "true"]
        retry = self._handle_batch(fresh, finished)
        for frame in again:
            retry += self._handle_redelivered(frame, finished)
        settled = {_digest(f) for f in again} - {_digest(f) for f in retry}
        if settled:  # before the acks: a failure here leaves everything to retry
            dead_letters.clear_deliveries(self.engine, sorted(settled))
        for batch, sent in finished:
            self._finish(batch, sent)
        return retry

    def _handle_batch(
        self, frames: Sequence[Frame], finished: list[tuple[Batch, dict[int, str]]]
    ) -> list[Frame]:
        if not frames:
            return []
        batch = self.triage(frames, time.time())
        try:
            sent = self.process(batch)
        except Exception as exc:
            if isinstance(exc, BrokerUnavailable) or dead_letters.outage(exc):
                raise
            log.warning("a batch of %d tasks failed (%s); retrying one at a time",
                        len(batch.tasks), dead_letters.one_line(repr(exc), 300))  # fmt: skip
            sent = self._one_at_a_time(batch)
        retry = self._settle_failures(batch)
        finished.append((batch, sent))
        return retry

    def _handle_redelivered(
        self, frame: Frame, finished: list[tuple[Batch, dict[int, str]]]
    ) -> list[Frame]:
        """A message delivered again: the listener that had it may have died on it (a crash
        no exception reports). Its redeliveries are counted in the database before it is
        processed, alone; at ``dead_letter_after`` it goes to the dead letter instead of
        taking the listener down once more."""
        n = dead_letters.count_delivery(self.engine, _digest(frame))
        if n < self.settings.dead_letter_after:
            return self._handle_batch([frame], finished)
        why = f"{n} deliveries ended without an answer: the listener may have died on it"
        self._dead_letter(frame, "failed", why, attempts=n, task_id=_task_id(frame))
        finished.append((Batch(done=[frame]), {}))
        return []

    def process(self, batch: Batch) -> dict[int, str]:
        """Predict, record and publish the batch's tasks; the messages sent, by task."""
        version = self.pipeline.version
        known = outbox.entries(self.engine, list(batch.tasks), version) if batch.tasks else {}
        to_send: dict[int, str] = {}
        for tid, entry in known.items():
            if entry.published:
                self.metrics.count("duplicate", len(batch.tasks[tid]))
                batch.done.extend(batch.tasks.pop(tid))
            else:
                to_send[tid] = entry.message  # committed before a crash: publish again
        to_send |= self.predictor.predict([t for t in batch.tasks if t not in known], batch)
        if to_send:
            self.broker.send_confirmed(
                self.settings.publish, list(to_send.values()), self.settings.receipt_timeout_s
            )
            outbox.mark_published(self.engine, list(to_send), version)
        return to_send

    def _one_at_a_time(self, batch: Batch) -> dict[int, str]:
        """Each task of a failed batch alone: the good ones go through, the failing ones
        are noted in ``batch.failed``; an outage still raises."""
        sent: dict[int, str] = {}
        for tid in list(batch.tasks):
            part = batch.subset([tid])
            try:
                sent |= self.process(part)
            except Exception as exc:
                if isinstance(exc, BrokerUnavailable) or dead_letters.outage(exc):
                    raise
                batch.failed[tid] = f"{type(exc).__name__}: {exc}"
                continue
            batch.done.extend(part.done)
            batch.malformed += part.malformed
            if tid not in part.tasks:  # a duplicate or an unknown task: handled
                batch.tasks.pop(tid)
        return sent

    def _settle_failures(self, batch: Batch) -> list[Frame]:
        """Dead-letter the malformed frames and those that failed ``dead_letter_after``
        times (acked with the batch); the other failed frames are returned for a retry."""
        retry: list[Frame] = []
        for frame, why in batch.malformed:
            self._dead_letter(frame, "malformed", why, attempts=1)
            batch.done.append(frame)
        for tid, why in batch.failed.items():
            frames = batch.tasks.pop(tid)
            batch.received.pop(tid, None)
            for frame in frames:
                key = _digest(frame)
                self.attempts[key] = n = self.attempts.get(key, 0) + 1
                log.error("task %s: attempt %d failed: %s", tid, n, dead_letters.one_line(why, 500))
                if n < self.settings.dead_letter_after:
                    retry.append(frame)
                    continue
                self._dead_letter(frame, "failed", why, attempts=n, task_id=tid)
                self.attempts.pop(key, None)
                batch.done.append(frame)
        return retry

    def _dead_letter(
        self, frame: Frame, kind: str, why: str, *, attempts: int, task_id: int | None = None
    ) -> None:
        """Record the frame (and publish it to the dead-letter destination) before its ack."""
        reason = dead_letters.one_line(why)
        dead_letters.record(
            self.engine, kind=kind, reason=reason, body=frame.body, attempts=attempts,
            jeditaskid=task_id, message_id=frame.headers.get("message-id"),
            destination=frame.headers.get("destination"),
        )  # fmt: skip
        destination = self.settings.dead_letter_destination
        if destination:
            self.broker.send_confirmed(
                destination, [frame.body], self.settings.receipt_timeout_s,
                headers={"scoutless-reason": reason[:500], "scoutless-kind": kind},
            )  # fmt: skip
        log.error("dead letter (%s, %d attempts, message %s): %s",
                  kind, attempts, frame.headers.get("message-id"), reason)  # fmt: skip
        self.metrics.count("malformed" if kind == "malformed" else "dead_letter")
        self.metrics.dead_letters.labels(kind).inc()
        self.metrics.dead_letters_stored.labels(kind).inc()

    def _finish(self, batch: Batch, sent: dict[int, str]) -> None:
        now = time.time()
        for tid in sent:
            self.metrics.latency.observe(max(0.0, now - batch.received[tid]))
            self.metrics.published.labels(str('"skip_scout":true' in sent[tid]).lower()).inc()
        self.metrics.count("predicted", len(sent))
        for frame in [*batch.done, *(f for frames in batch.tasks.values() for f in frames)]:
            if self.attempts:
                self.attempts.pop(_digest(frame), None)
            self.broker.ack(frame)

    # -- the loop ------------------------------------------------------------------------------
    def _next_batch(self, pending: list[Frame]) -> list[Frame]:
        """Pending frames plus what arrived; frames of a dead connection are dropped (the
        broker redelivers them, and their acks would not count)."""
        frames = list(pending)
        try:
            if not frames:
                frames.append(self.broker.frames.get(timeout=0.2))
            while len(frames) < self.settings.batch_max:
                frames.append(self.broker.frames.get_nowait())
        except queue.Empty:
            pass
        return [f for f in frames if self.broker.current(f)]

    def run(self, stop: threading.Event) -> None:
        """Consume until ``stop`` is set; never raises for a message or an outage."""
        s = self.settings
        delay = s.reconnect_initial_s
        pending: list[Frame] = []
        self.alive.set()
        try:
            while not stop.is_set():
                if not self.broker.connected.is_set():
                    self.metrics.connected.set(0)
                    if not self.broker.connect(s.reconnect_initial_s, s.reconnect_max_s, stop):
                        break
                    self.metrics.connected.set(1)
                    self.metrics.reconnects.inc()
                frames = self._next_batch(pending)
                pending = []
                if not frames:
                    continue
                try:
                    pending = self.handle(frames)
                    delay = s.reconnect_initial_s
                except DatabaseUnavailable as exc:
                    self.metrics.errors.labels("database").inc()
                    log.error(
                        "database unavailable, %d messages kept unacked: %s", len(frames), exc
                    )
                    pending = frames
                    stop.wait(delay)
                    delay = min(delay * 2, s.reconnect_max_s)
                except BrokerUnavailable as exc:
                    self.metrics.errors.labels("broker").inc()
                    log.error(
                        "broker unavailable, %d messages left to redelivery: %s", len(frames), exc
                    )
                    self.broker.close()
                except Exception as exc:  # a bug outside any one message: keep them, back off
                    self.metrics.errors.labels("unexpected").inc()
                    log.exception("batch of %d messages kept unacked after: %r", len(frames), exc)
                    pending = frames
                    stop.wait(delay)
                    delay = min(delay * 2, s.reconnect_max_s)
        finally:
            self.alive.clear()
            self.broker.close()
            self.metrics.connected.set(0)

    def healthy(self) -> bool:
        return self.alive.is_set() and self.broker.connected.is_set()


def _task_id(frame: Frame) -> int | None:
    try:
        return parse_task_status(frame.body).task_id
    except Exception:
        return None


def _digest(frame: Frame) -> str:
    """A message's identity across redeliveries (the broker's message-id changes)."""
    return hashlib.sha256(frame.body.encode("utf-8", "surrogatepass")).hexdigest()
