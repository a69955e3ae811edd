"""A STOMP connection (stomp.py) that reconnects with backoff and knows its generation.

Frames arrive on a local queue tagged with the connection generation they came on: an
ack is only valid on that connection, so after a reconnect the frames still held are
dropped (the broker redelivers every unacked message). Sends carry a receipt, and
RabbitMQ answers a receipt only once the message is confirmed, so ``send_confirmed``
returning means the message is the broker's.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import ssl
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import stomp
from stomp.exception import StompException

log = logging.getLogger("scoutless.panda.broker")


class BrokerUnavailable(RuntimeError):
    """The broker cannot be reached or did not confirm in time."""


@dataclass(frozen=True)
class Frame:
    body: str
    headers: dict[str, str]
    generation: int

    @property
    def ack_id(self) -> str:
        return self.headers.get("ack") or self.headers["message-id"]


SCHEMES = {"stomp": False, "stomp+ssl": True}  # scheme → TLS


@dataclass(frozen=True)
class TlsFiles:
    """TLS to the broker (``stomp+ssl://``): the CA to verify it by (None: the system's),
    and a client certificate and key where the broker asks for one."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


def parse_broker_url(url: str) -> tuple[str, int]:
    parsed = urlparse(url)
    if parsed.scheme not in SCHEMES or not parsed.hostname or not parsed.port:
        raise ValueError(f"broker={url!r}: expected stomp://HOST:PORT or stomp+ssl://HOST:PORT")
    return parsed.hostname, parsed.port


def uses_tls(url: str) -> bool:
    return SCHEMES.get(urlparse(url).scheme, False)


class StompBroker(stomp.ConnectionListener):
    """Subscribe to one destination (client-individual acks) and publish to others."""

    def __init__(
        self,
        url: str,
        subscribe: str,
        *,
        username: str | None = None,
        passcode: str | None = None,
        prefetch: int = 200,
        heartbeat_ms: int = 10_000,
        vhost: str | None = "/",
        on_reconnect: Callable[[], None] | None = None,
        tls: TlsFiles | None = None,
    ) -> None:
        """``tls``: its files for a ``stomp+ssl://`` URL (the broker verified by hostname
        against the CA); a ``stomp+ssl://`` URL without it uses the system's CAs."""
        self.host_port = parse_broker_url(url)
        self.tls = (tls or TlsFiles()) if uses_tls(url) else None
        if tls is not None and self.tls is None:
            raise ValueError(f"broker={url!r}: TLS files given for a plain stomp:// URL")
        self.subscribe_to = subscribe
        self.credentials = (username, passcode)
        self.prefetch = prefetch
        self.heartbeat_ms = heartbeat_ms
        self.vhost = vhost
        self.on_reconnect = on_reconnect
        self.frames: queue.Queue[Frame] = queue.Queue()
        self.generation = 0
        self.connected = threading.Event()
        self._conn: stomp.Connection12 | None = None
        self._receipts: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    # -- stomp.py callbacks (its receiver thread) ---------------------------------------
    def on_message(self, frame) -> None:  # type: ignore[no-untyped-def]
        self.frames.put(Frame(frame.body, dict(frame.headers), self.generation))

    def on_receipt(self, frame) -> None:  # type: ignore[no-untyped-def]
        event = self._receipts.get(frame.headers.get("receipt-id", ""))
        if event is not None:
            event.set()

    def on_error(self, frame) -> None:  # type: ignore[no-untyped-def]
        log.error("broker error: %s %s", frame.headers.get("message"), frame.body[:200])

    def on_disconnected(self) -> None:
        if self.connected.is_set():
            log.warning("disconnected from broker %s:%s", *self.host_port)
        self.connected.clear()

    # -- connection ------------------------------------------------------------------------
    def connect_once(self) -> None:
        """One attempt: connect, subscribe; raises BrokerUnavailable on failure."""
        conn = stomp.Connection12(
            [self.host_port], heartbeats=(self.heartbeat_ms, self.heartbeat_ms),
            reconnect_attempts_max=1, timeout=5, vhost=self.vhost,
        )  # fmt: skip
        conn.set_listener("scoutless", self)
        if self.tls is not None:
            conn.set_ssl(
                for_hosts=[self.host_port], ca_certs=self.tls.ca_file,
                cert_file=self.tls.cert_file, key_file=self.tls.key_file,
                ssl_version=ssl.PROTOCOL_TLS_CLIENT,
            )  # fmt: skip
        username, passcode = self.credentials
        try:
            with self._lock:
                self.generation += 1
            conn.connect(username, passcode, wait=True, headers={"client-id": uuid.uuid4().hex})
            conn.subscribe(
                self.subscribe_to, id="scoutless-1", ack="client-individual",
                headers={"prefetch-count": str(self.prefetch)},
            )  # fmt: skip
        except (StompException, OSError) as exc:
            raise BrokerUnavailable(f"{self.describe()}: {type(exc).__name__}: {exc}") from exc
        self._conn = conn
        self.connected.set()
        log.info("connected to %s:%s, subscribed to %s", *self.host_port, self.subscribe_to)

    def describe(self) -> str:
        scheme = "stomp+ssl" if self.tls is not None else "stomp"
        return f"{scheme}://{self.host_port[0]}:{self.host_port[1]}"

    def connect(self, initial_s: float, max_s: float, stop: threading.Event) -> bool:
        """Connect with exponential backoff until connected (True) or ``stop`` is set."""
        delay = initial_s
        while not stop.is_set():
            try:
                self.connect_once()
                if self.on_reconnect is not None and self.generation > 1:
                    self.on_reconnect()
                return True
            except BrokerUnavailable as exc:
                log.warning("broker unavailable (%s); retrying in %.1f s", exc, delay)
                stop.wait(delay)
                delay = min(delay * 2, max_s)
        return False

    def close(self) -> None:
        conn, self._conn = self._conn, None
        self.connected.clear()
        if conn is not None:
            with contextlib.suppress(StompException, OSError):
                conn.disconnect()

    # -- acks and sends ------------------------------------------------------------------------
    def current(self, frame: Frame) -> bool:
        """Whether the frame's ack is still valid (it came on the live connection)."""
        return frame.generation == self.generation and self.connected.is_set()

    def ack(self, frame: Frame) -> bool:
        if not self.current(frame) or self._conn is None:
            return False
        try:
            self._conn.ack(frame.ack_id)
            return True
        except (StompException, OSError):
            return False

    def send_confirmed(
        self,
        destination: str,
        bodies: list[str],
        timeout_s: float,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Publish persistent messages and wait until the broker confirms every one."""
        conn = self._conn
        if conn is None or not self.connected.is_set():
            raise BrokerUnavailable("not connected")
        waits = []
        try:
            for body in bodies:
                receipt = uuid.uuid4().hex
                event = self._receipts.setdefault(receipt, threading.Event())
                waits.append((receipt, event))
                conn.send(destination, body, content_type="application/json",
                          headers={**(headers or {}), "persistent": "true",
                                   "receipt": receipt})  # fmt: skip
            deadline = time.monotonic() + timeout_s
            for _, event in waits:
                if not event.wait(max(0.0, deadline - time.monotonic())):
                    raise BrokerUnavailable(f"no receipt from the broker in {timeout_s} s")
        except (StompException, OSError) as exc:
            raise BrokerUnavailable(f"send to {destination}: {exc}") from exc
        finally:
            for receipt, _ in waits:
                self._receipts.pop(receipt, None)


def tls_files(settings: Any) -> TlsFiles | None:
    """The listener settings' TLS files, for a ``stomp+ssl://`` broker (None otherwise)."""
    if not uses_tls(settings.broker):
        return None
    return TlsFiles(settings.tls_ca_file, settings.tls_cert_file, settings.tls_key_file)
