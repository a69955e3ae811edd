"""The HTTP protocol the service's uvicorn runs: uvicorn's own, with a request-head timeout.

uvicorn closes an idle keep-alive connection, but a connection that sends part of a request
line or of its headers and then nothing is kept open for ever: enough of them exhaust the
process's file descriptors and memory. :class:`HeadTimeoutProtocol` closes a connection
whose request head (line and headers) is not complete within ``header_timeout_s`` of the
connection's opening, or of the previous answer on it. A request whose head is in is never
cut by it: its body has the body timeout (:mod:`scoutless.service.limits`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from scoutless.config import ServiceSettings


class HeadTimeoutProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing connections whose request head is late."""

    head_timeout_s: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._stop_head_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.cycle.response_complete and not self.transport.is_closing():
            self._await_head()  # no request started from the pipeline: the next one's head

    def _await_head(self) -> None:
        self._stop_head_timer()
        self.head_timer = self.loop.call_later(self.head_timeout_s, self._head_late)

    def _stop_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_late(self) -> None:
        self.head_timer = None
        running = self.cycle is not None and not self.cycle.response_complete
        if not running and not self.transport.is_closing():
            self.transport.close()


def http_protocol(settings: ServiceSettings) -> type[HeadTimeoutProtocol]:
    """The protocol class for uvicorn's ``http=`` option, with the settings' timeout."""
    return type(
        "HeadTimeoutProtocol", (HeadTimeoutProtocol,), {"head_timeout_s": settings.header_timeout_s}
    )
