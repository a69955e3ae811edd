"""Limits enforced while a request arrives: body size, body time, requests in progress.

Plain ASGI (no BaseHTTPMiddleware: microseconds a request). The body is counted as it
streams in, so an oversized upload gets 413 as soon as its ``Content-Length`` says so, or
as soon as the bytes received pass the limit, never after reading it all; a body that does
not arrive within ``body_timeout_s`` gets 408 (a stalled upload no longer holds a
connection); beyond ``max_concurrent`` requests in progress, ``/v1/*`` answers 503 at once
with ``Retry-After`` rather than queueing without bound. Health probes are never refused.
"""

from __future__ import annotations

import asyncio
import time

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from scoutless.config import ServiceSettings
from scoutless.service.errors import ServiceError, error_body

#: paths the limits never refuse (probes must see a busy service as alive)
OPEN_PATHS = frozenset({"/healthz", "/readyz"})


class LimitsMiddleware:
    def __init__(self, app: ASGIApp, settings: ServiceSettings) -> None:
        self.app = app
        self.max_bytes = int(settings.max_body_mb * 1024 * 1024)
        self.timeout_s = settings.body_timeout_s
        self.max_concurrent = settings.max_concurrent
        self.in_progress = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if self.in_progress >= self.max_concurrent:
            await _refuse(send, 503, "busy", f"{self.in_progress} requests in progress; retry",
                          {"retry-after": "1"})  # fmt: skip
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await _refuse(send, 413, "body_too_large", self._too_large(declared))
            return
        self.in_progress += 1
        try:
            await self.app(scope, self._bounded(receive), send)
        finally:
            self.in_progress -= 1

    def _too_large(self, n_bytes: int) -> str:
        return f"request body of {n_bytes} bytes or more; the limit is {self.max_bytes}"

    def _bounded(self, receive: Receive) -> Receive:
        received = 0
        deadline: float | None = None
        complete = False

        async def bounded() -> Message:
            nonlocal received, deadline, complete
            if complete:  # the body is in: later reads wait for a disconnect, unbounded
                return await receive()
            if deadline is None:
                deadline = time.monotonic() + self.timeout_s
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    message = await receive()
            except TimeoutError:
                raise ServiceError(
                    408, "body_timeout", f"request body not received within {self.timeout_s}s"
                ) from None
            complete = message["type"] != "http.request" or not message.get("more_body", False)
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                raise ServiceError(413, "body_too_large", self._too_large(received))
            return message

        return bounded


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(
    send: Send, status: int, kind: str, msg: str, headers: dict[str, str] | None = None
) -> None:
    body = orjson.dumps(error_body(kind, msg))
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
