"""The pieces of a one-machine PanDA for the integration tests: PostgreSQL loaded with
PanDA's DDL, RabbitMQ (STOMP), a stand-in for JEDI, the listener and panda-common's agent
as real processes, and a TCP proxy that can cut the listener off its database."""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
from sqlalchemy import text

from scoutless.panda.standin import JediStandIn, applied_counts, write_agent_files

__all__ = ["JediStandIn", "World", "applied_counts"]

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
    env = {"SCOUTLESS_LISTENER__RECONNECT_MAX_S": "1", "SCOUTLESS_LISTENER__HEARTBEAT_MS": "2000",
           "SCOUTLESS_LISTENER__DEAD_LETTER_DESTINATION": dead_letter_queue(status_q)}  # fmt: skip
    return Proc(args, tmp / f"listener-{uuid.uuid4().hex[:6]}.log", env)


def dead_letter_queue(status_q: str) -> str:
    """The run's own dead-letter destination, beside its status queue."""
    return status_q.replace("_jobtaskstatus", "_dead_letters")


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


@dataclass
class World:
    tmp: Path
    db: str
    db_via_proxy: str
    bundle: Path
    broker: tuple[str, int]
    status_q: str
    prediction_q: str
    proxy: TcpProxy
    jedi: JediStandIn
    agent: Proc
    plugin_log: Path
    listener: Proc | None = None
    health_port: int = 0

    def start_listener(self) -> None:
        self.health_port = free_port()
        self.listener = start_listener(
            self.tmp, bundle=self.bundle, db=self.db_via_proxy, broker=f"stomp://{self.broker[0]}:{self.broker[1]}",
            status_q=self.status_q, prediction_q=self.prediction_q, health_port=self.health_port,
        )  # fmt: skip
        wait_for(self.healthy, 180, "the listener to be healthy", every=0.5)

    def healthy(self) -> bool:
        assert self.listener is not None and self.listener.p.poll() is None, self.listener.text()
        try:
            return (
                httpx.get(f"http://127.0.0.1:{self.health_port}/healthz", timeout=2).status_code
                == 200
            )
        except httpx.HTTPError:
            return False

    def metric(self, name: str) -> float:
        body = httpx.get(f"http://127.0.0.1:{self.health_port}/metrics", timeout=5).text
        return sum(
            float(line.rsplit(" ", 1)[1]) for line in body.splitlines() if line.startswith(name)
        )

    def outbox(self, ids: list[int]) -> dict[int, dict]:
        sql = text(
            "SELECT jeditaskid, message FROM scoutless_panda_outbox WHERE jeditaskid = ANY(:ids)"
        )
        with self.jedi.engine.connect() as conn:
            return {r.jeditaskid: json.loads(r.message) for r in conn.execute(sql, {"ids": ids})}

    def settle(
        self, ids: list[int], timeout: float = 90, left_alone: Sequence[int] = ()
    ) -> dict[int, dict]:
        """Wait until every task has its prediction and each skip_scout one still pending
        (not in ``left_alone``) is applied."""
        wait_for(
            lambda: len(self.outbox(ids)) == len(ids), timeout, f"predictions for {len(ids)} tasks"
        )
        skip = {t for t, m in self.outbox(ids).items() if m["skip_scout"]} - set(left_alone)
        try:
            wait_for(lambda: set(self.jedi.updated(ids)) == skip, timeout,
                     f"{len(skip)} tasks updated")  # fmt: skip
        except AssertionError as timed_out:  # say which, so that a rare miss can be read
            updated, now = set(self.jedi.updated(ids)), self.outbox(ids)
            flipped = {t for t in skip if not now[t]["skip_scout"]}
            raise AssertionError(
                f"{timed_out}: not updated {sorted(skip - updated)}, updated but not skipped "
                f"{sorted(updated - skip)}, skip_scout since withdrawn {sorted(flipped)}"
            ) from None
        return self.outbox(ids)
