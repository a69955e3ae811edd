"""The pieces of a one-machine PanDA for the integration tests: PostgreSQL loaded with
PanDA's DDL, RabbitMQ (STOMP), a stand-in for JEDI, the listener and panda-common's agent
as real processes, and a TCP proxy that can cut the listener off its database."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from scoutless.panda.standin import JediStandIn, applied_counts, write_agent_files

__all__ = ["JediStandIn", "applied_counts"]

ROOT = Path(__file__).resolve().parents[2]
CLI = "from scoutless.cli.main import app; app()"


def wait_for(check: Callable[[], object], timeout: float, what: str, every: float = 0.1):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Proc:
    """A child process with its output in a file."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        self._out = open(log, "ab")  # noqa: SIM115
        self.p = subprocess.Popen(args, stdout=self._out, stderr=subprocess.STDOUT, cwd=ROOT,
                                  env={**os.environ, **(env or {})})  # fmt: skip

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = 15) -> None:
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)
        self._out.close()


def start_listener(tmp: Path, *, bundle: Path, db: str, broker: str, status_q: str,
                   prediction_q: str, health_port: int) -> Proc:  # fmt: skip
    args = [sys.executable, "-c", CLI, "listen", "--bundle", str(bundle), "--db", db,
            "--broker", broker, "--subscribe", status_q, "--publish", prediction_q,
            "--policy", "risk", "--alpha", "0.05", "--health-port", str(health_port)]  # fmt: skip
    env = {"SCOUTLESS_LISTENER__RECONNECT_MAX_S": "1", "SCOUTLESS_LISTENER__HEARTBEAT_MS": "2000"}
    return Proc(args, tmp / f"listener-{uuid.uuid4().hex[:6]}.log", env)


def start_agent(
    tmp: Path, *, db: str, broker: tuple[str, int], prediction_q: str
) -> tuple[Proc, Path]:
    """panda-common's own MsgProcAgentBase with the scoutless plugin, as JEDI configures it."""
    files = write_agent_files(tmp, db=db, broker=broker, prediction_queue=prediction_q)
    proc = Proc([sys.executable, "-m", "scoutless.panda.agent", str(files.config)],
                tmp / "agent.log", {"PANDA_HOME": str(files.panda_home)})  # fmt: skip
    return proc, files.plugin_log


class TcpProxy:
    """Forward a local port to the database; ``cut()`` drops every connection and refuses
    new ones (a database outage as the client sees it), ``restore()`` ends it."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._socks: list[socket.socket] = []
        self._server: socket.socket | None = None
        self._lock = threading.Lock()
        self.restore()

    def restore(self) -> None:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.port))
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            server, self._server = self._server, None
            socks, self._socks = self._socks, []
        if server is not None:
            with contextlib.suppress(OSError):
                server.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked on it
            server.close()
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._socks += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1.0)
                for src in ready:
                    data = src.recv(65536)
                    if not data:
                        return
                    (b if src is a else a).sendall(data)
        except OSError:
            return
        finally:
            a.close()
            b.close()
