"""Prometheus metrics and a /healthz + /metrics HTTP endpoint for the listener."""

from __future__ import annotations

import ipaddress
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST


class ListenerMetrics:
    """Counters per message outcome, latency from JEDI's timestamp to the confirmed publish."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.messages = Counter(
            "scoutless_listener_messages", "task_status messages by outcome",
            ["outcome"], registry=self.registry,
        )  # fmt: skip
        self.published = Counter(
            "scoutless_listener_published", "scout_prediction messages confirmed by the broker",
            ["skip_scout"], registry=self.registry,
        )  # fmt: skip
        self.errors = Counter(
            "scoutless_listener_errors", "failures that left messages unacked (retried)",
            ["kind"], registry=self.registry,
        )  # fmt: skip
        self.dead_letters = Counter(
            "scoutless_listener_dead_letters", "messages sent to the dead letter, by kind "
            "(malformed: at once; failed: after dead_letter_after attempts)",
            ["kind"], registry=self.registry,
        )  # fmt: skip
        self.dead_letters_stored = Gauge(
            "scoutless_listener_dead_letters_stored",
            "rows in scoutless_dead_letters by kind (read at start, then kept up to date)",
            ["kind"], registry=self.registry,
        )  # fmt: skip
        self.reconnects = Counter(
            "scoutless_listener_reconnects", "broker reconnections", registry=self.registry
        )
        self.connected = Gauge(
            "scoutless_listener_connected", "1 while subscribed to the broker",
            registry=self.registry,
        )  # fmt: skip
        self.arms = Counter(
            "scoutless_listener_arm", "predicted tasks by rollout arm (shadow, canary, control …)",
            ["arm"], registry=self.registry,
        )  # fmt: skip
        self.mode = Gauge(
            "scoutless_rollout_mode", "1 for the rollout mode in force", ["mode"],
            registry=self.registry,
        )  # fmt: skip
        self.latency = Histogram(
            "scoutless_listener_latency_seconds", "task_status timestamp to prediction published",
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60), registry=self.registry,
        )  # fmt: skip

    def count(self, outcome: str, n: int = 1) -> None:
        if n:
            self.messages.labels(outcome).inc(n)

    def value(self, outcome: str) -> float:
        return self.messages.labels(outcome)._value.get()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class HealthServer:
    """``/healthz`` (200 while ``healthy()``, else 503) and ``/metrics`` on a thread, on
    loopback only: they carry no token, so a scraper elsewhere goes through a proxy."""

    def __init__(self, port: int, metrics: ListenerMetrics, healthy: Any, host: str = "127.0.0.1"):
        if not _loopback(host):
            raise ValueError(
                f"listener health server: host {host!r} is not loopback; /metrics and "
                "/healthz carry no token and stay on 127.0.0.1"
            )
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/metrics"):
                    self._send(200, metrics.render(), CONTENT_TYPE_LATEST)
                elif self.path.startswith("/healthz"):
                    ok = bool(outer.healthy())
                    self._send(200 if ok else 503, b"ok\n" if ok else b"unhealthy\n", "text/plain")
                else:
                    self._send(404, b"not found\n", "text/plain")

            def _send(self, status: int, body: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # quiet
                return

        self.healthy = healthy
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> HealthServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name other than localhost: it may resolve anywhere
        return False
