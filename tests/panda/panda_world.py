"""The pieces of a one-machine PanDA for the integration tests: PostgreSQL loaded with
PanDA's DDL, RabbitMQ (STOMP), a stand-in for JEDI, the listener and panda-common's agent
as real processes, and a TCP proxy that can cut the listener off its database."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pandas as pd
import stomp
from sqlalchemy import Engine, text

from scoutless.history.panda_db import bulk_insert

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


class JediStandIn:
    """Inserts tasks as JEDI's refiner leaves them (``defined``, ``PC=1,US=2``) and
    publishes their status like ``push_task_status_message``."""

    def __init__(self, engine: Engine, frames, broker: tuple[str, int], status_queue: str):  # type: ignore[no-untyped-def]
        self.engine = engine
        self.frames = frames
        self.status_queue = status_queue
        self.broker = broker
        self.used = 0
        self.reconnect()

    def reconnect(self) -> None:
        self.conn = stomp.Connection12([self.broker], vhost="/")
        self.conn.connect(wait=True)

    def insert(self, n: int, *, status: str = "defined") -> list[int]:
        tasks = self.frames.tasks.iloc[self.used : self.used + n].copy()
        self.used += n
        ids = tasks["jeditaskid"].astype(int).tolist()
        now = datetime.now()
        for col in ("ramcount", "cputime", "walltime", "iointensity", "diskio"):
            tasks[col] = pd.Series([None] * n, dtype="Int64", index=tasks.index)
        tasks = tasks.assign(status=status, splitrule="PC=1,US=2", iointensityunit=None,
                             creationdate=now, modificationtime=now)  # fmt: skip
        bulk_insert(self.engine, "jedi_tasks", tasks)
        bulk_insert(
            self.engine,
            "jedi_taskparams",
            self.frames.taskparams[self.frames.taskparams.jeditaskid.isin(ids)],
        )
        bulk_insert(
            self.engine,
            "jedi_datasets",
            self.frames.datasets[self.frames.datasets.jeditaskid.isin(ids)],
        )
        return ids

    def publish(
        self, task_id: int, status: str = "defined", timestamp: float | None = None
    ) -> None:
        body = {"msg_type": "task_status", "taskid": task_id, "status": status,
                "timestamp": int(time.time()) if timestamp is None else timestamp}  # fmt: skip
        self.send(json.dumps(body))

    def send(self, body: str) -> None:
        self.conn.send(self.status_queue, body, headers={"persistent": "true"})

    def close(self) -> None:
        if self.conn.is_connected():
            self.conn.disconnect()

    def updated(self, ids: list[int]) -> dict[int, dict]:
        """Tasks whose splitrule says no scouts (US=1), with their resource columns."""
        sql = text(
            "SELECT jeditaskid, status, splitrule, ramcount, ramunit, cputime, cputimeunit, "
            "iointensity, iointensityunit, walltime, walltimeunit FROM jedi_tasks "
            "WHERE jeditaskid = ANY(:ids)"
        )
        with self.engine.connect() as conn:
            rows = conn.execute(sql, {"ids": ids}).mappings().all()
        return {r["jeditaskid"]: dict(r) for r in rows if "US=1" in (r["splitrule"] or "")}


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


#: panda-common's [logger] section (its template, panda_common.cfg.rpmnew), logs to a folder
PANDA_COMMON_CFG = """[logger]
loghost=localhost
monport-apache=80
method=GET
encoding=url
loghost_new=localhost
monport-apache_new=8081
method_new=POST
encoding_new=json
monurlprefix=/logger/logger/query
logdir={logdir}
nemitters=1
migrated=True
log_level=DEBUG
rotating_policy=none
rotating_backup_count=1
rotating_max_size=1024
rotating_interval=24
"""


def start_agent(
    tmp: Path, *, db: str, broker: tuple[str, int], prediction_q: str
) -> tuple[Proc, Path]:
    """panda-common's own MsgProcAgentBase with the scoutless plugin, as JEDI configures it."""
    home, logdir = tmp / "panda_home", tmp / "panda_logs"
    (home / "etc/panda").mkdir(parents=True, exist_ok=True)
    logdir.mkdir(exist_ok=True)
    (home / "etc/panda/panda_common.cfg").write_text(PANDA_COMMON_CFG.format(logdir=logdir))
    config = {
        "guard_period": 1,
        "mb_servers": {"local": {"host_port_list": [f"{broker[0]}:{broker[1]}"], "use_ssl": False,
                                 "username": "guest", "passcode": "guest", "vhost": "/",
                                 "verbose": False}},
        "queues": {"scout_prediction": {"enable": True, "server": "local", "destination": prediction_q}},
        "processors": {"scout_prediction": {
            "enable": True, "module": "scoutless.panda.jedi_plugin", "name": "ScoutPredictionProcessor",
            "n_threads": 2, "in_queue": "scout_prediction", "params": {"db_url": db}}},
    }  # fmt: skip
    path = tmp / "msg_processor.json"
    path.write_text(json.dumps(config))
    proc = Proc([sys.executable, "-m", "scoutless.panda.agent", str(path)], tmp / "agent.log",
                {"PANDA_HOME": str(home)})  # fmt: skip
    return proc, logdir / "panda-scoutless_scout_prediction.log"


def applied_counts(plugin_log: Path) -> dict[int, int]:
    """task id → how many times the plugin logged 'applied' for it."""
    counts: dict[int, int] = {}
    if plugin_log.exists():
        for m in re.finditer(r"task_id=(\d+) model=\S+: applied", plugin_log.read_text()):
            counts[int(m.group(1))] = counts.get(int(m.group(1)), 0) + 1
    return counts


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
