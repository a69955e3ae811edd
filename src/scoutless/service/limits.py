"""Limits enforced while a request arrives: body size, body time, tasks, requests in progress.

Plain ASGI (no BaseHTTPMiddleware: microseconds a request). The body is checked as it
streams in, never after reading it all: an oversized upload gets 413 as soon as its
``Content-Length`` says so, or as soon as the bytes received pass the limit; a prediction
request gets 413 as soon as its ``tasks`` array passes ``max_batch`` elements, or its
JSON values ``max_body_values`` (:mod:`scoutless.service.task_count`); a body that does not arrive within
``body_timeout_s`` gets 408.

A request takes one of the ``max_concurrent`` slots only once its body is in (at once when
it has none, or when its method's routes never read one): callers that start uploads and never finish them hold no slot, so they cannot
make every other caller wait or be refused. Bodies still arriving in several parts are
bounded apart (``max_uploads``); a body that arrives at once is never refused for them.
Beyond either bound, ``/v1/*`` answers 503 at once with ``Retry-After`` rather than
queueing without bound. Health probes are never refused.
"""

from __future__ import annotations

import asyncio
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from scoutless.config import ServiceSettings
from scoutless.service.errors import ServiceError, send_error
from scoutless.service.request_guard import BODY_METHODS
from scoutless.service.task_count import OUTSIDE_VALUES, TaskCounter

#: paths the limits never refuse (probes must see a busy service as alive)
OPEN_PATHS = frozenset({"/healthz", "/readyz"})
#: the route whose body's tasks are counted as it arrives
PREDICT_PATH = "/v1/predict"
RETRY = {"retry-after": "1"}


class LimitsMiddleware:
    def __init__(self, app: ASGIApp, settings: ServiceSettings) -> None:
        self.app = app
        self.max_bytes = int(settings.max_body_mb * 1024 * 1024)
        self.timeout_s = settings.body_timeout_s
        self.max_concurrent = settings.max_concurrent
        self.max_uploads = settings.max_uploads
        self.max_tasks = settings.max_batch
        self.max_values = settings.max_body_values
        self.in_progress = 0  # requests holding a slot
        self.uploading = 0  # requests waiting for the rest of their body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        declared, has_body = _body_headers(scope)
        if declared is not None and declared > self.max_bytes:
            await send_error(send, 413, "body_too_large", self.too_large(declared))
            return
        # the request is in: no body, or one its method's routes never read (such a
        # request counts at once: it cannot dodge the slots by a body)
        if not has_body or scope["method"] not in BODY_METHODS:
            if self.in_progress >= self.max_concurrent:
                await send_error(send, 503, "busy", self.busy(), RETRY)
                return
            self.in_progress += 1
            try:
                await self.app(scope, receive, send)
            finally:
                self.in_progress -= 1
            return
        body = BodyReader(self, receive, self._counter(scope, declared))
        try:
            await self.app(scope, body.receive, send)
        finally:
            body.close()

    def _counter(self, scope: Scope, declared: int | None) -> TaskCounter | None:
        """A counter for a prediction request's body that may hold too many tasks or
        values (a value and its comma take two bytes at least)."""
        path = scope["path"][len(scope.get("root_path", "")) :]
        if path != PREDICT_PATH or scope["method"] != "POST":
            return None
        if declared is not None and declared <= 2 * min(self.max_tasks, OUTSIDE_VALUES):
            return None
        return TaskCounter(self.max_tasks, self.max_values)

    def too_large(self, n_bytes: int) -> str:
        return f"request body of {n_bytes} bytes or more; the limit is {self.max_bytes}"

    def busy(self) -> str:
        return f"{self.in_progress} requests in progress; retry"


class BodyReader:
    """One request's ``receive``, bounded: its deadline, its bytes and tasks counted; an
    upload while its body arrives in parts, a slot once the body is in."""

    def __init__(self, limits: LimitsMiddleware, receive: Receive, counter: TaskCounter | None):
        self.limits = limits
        self._receive = receive
        self.counter = counter
        self.received = 0
        self.deadline: float | None = None
        self.complete = False
        self.uploading = False
        self.holds_slot = False

    async def receive(self) -> Message:
        if self.complete:  # the body is in: later reads wait for a disconnect, unbounded
            return await self._receive()
        limits = self.limits
        if self.deadline is None:
            self.deadline = time.monotonic() + limits.timeout_s
            self._upload(True)  # counted, not refused: the body may come at once
        try:
            async with asyncio.timeout(max(0.0, self.deadline - time.monotonic())):
                message = await self._receive()
        except TimeoutError:
            raise ServiceError(
                408, "body_timeout", f"request body not received within {limits.timeout_s}s"
            ) from None
        self._check(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.complete = True
            self._upload(False)
            if message["type"] == "http.request":
                self._take_slot()
        elif limits.uploading > limits.max_uploads:
            self._upload(False)
            raise ServiceError(503, "busy", f"{limits.max_uploads} uploads in progress; "
                               "retry", headers=RETRY)  # fmt: skip
        return message

    def _check(self, chunk: bytes) -> None:
        """Refuse the body as soon as its bytes or its tasks pass the limits."""
        self.received += len(chunk)
        if self.received > self.limits.max_bytes:
            raise ServiceError(413, "body_too_large", self.limits.too_large(self.received))
        if self.counter is not None and chunk:
            refusal = self.counter.feed(chunk)
            if refusal is not None:
                where = ["body"] if refusal.status == 422 else []
                raise ServiceError(refusal.status, refusal.kind, refusal.message, where)

    def _upload(self, on: bool) -> None:
        if on != self.uploading:
            self.uploading = on
            self.limits.uploading += 1 if on else -1

    def _take_slot(self) -> None:
        limits = self.limits
        if limits.in_progress >= limits.max_concurrent:
            raise ServiceError(503, "busy", limits.busy(), headers=RETRY)
        limits.in_progress += 1
        self.holds_slot = True

    def close(self) -> None:
        """Give back the slot or the upload this request holds."""
        self._upload(False)
        if self.holds_slot:
            self.holds_slot = False
            self.limits.in_progress -= 1


def _body_headers(scope: Scope) -> tuple[int | None, bool]:
    """The declared ``Content-Length`` (None: none, or unreadable) and whether a body
    follows (a length above 0, an unreadable one, or ``Transfer-Encoding``)."""
    length, has_body = None, False
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                length = None
            has_body = has_body or length != 0
        elif name == b"transfer-encoding":
            has_body = True
    return length, has_body
