"""`scoutless serve --workers N`: N uvicorn servers, each on its own SO_REUSEPORT socket.

uvicorn's own multi-process mode shares one listening socket, and whichever worker wakes
first accepts every waiting connection: a handful of keep-alive clients (JEDI's processes,
a load generator) all land on one worker while the others idle, so the other cores serve
nothing. With one socket per worker, bound with SO_REUSEPORT, the kernel spreads
connections over the workers by their address hash.

The supervisor restarts a worker that dies, stops everything when a worker cannot start
(uvicorn's startup-failure exit code: a bad bundle would fail again), and turns SIGINT /
SIGTERM into a graceful drain of every worker. A worker whose supervisor is gone
(SIGKILL) drains and exits on its own instead of serving forever.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from multiprocessing.process import BaseProcess

log = logging.getLogger("scoutless.service")

#: uvicorn's exit code for a worker whose startup (lifespan) failed
STARTUP_FAILURE = 3
#: seconds a worker gets to drain its requests after SIGTERM before it is killed
DRAIN_S = 30.0
APP_FACTORY = "scoutless.service.app:app_from_env"


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket that other workers may bind to the same address too."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    return sock


def _worker(host: str, port: int, log_level: str, supervisor: int) -> None:
    import uvicorn

    from scoutless.config import get_settings
    from scoutless.service.http_head import http_protocol

    sock = reuse_port_socket(host, port)
    http = http_protocol(get_settings().service)
    config = uvicorn.Config(
        APP_FACTORY, factory=True, log_level=log_level, access_log=False, http=http
    )
    server = uvicorn.Server(config)

    def exit_with_supervisor() -> None:
        while os.getppid() == supervisor:
            time.sleep(1.0)
        server.should_exit = True  # orphaned: drain and stop like on SIGTERM

    threading.Thread(target=exit_with_supervisor, daemon=True).start()
    server.run(sockets=[sock])


class Supervisor:
    """Runs ``n`` workers until SIGINT/SIGTERM; returns the exit code."""

    def __init__(self, n: int, host: str, port: int, log_level: str) -> None:
        self.n, self.host, self.port, self.log_level = n, host, port, log_level
        self._context = multiprocessing.get_context("spawn")  # no torch state forked
        self._stop = threading.Event()

    def _start(self) -> BaseProcess:
        process = self._context.Process(
            target=_worker,
            args=(self.host, self.port, self.log_level, os.getpid()),
            name="scoutless-worker",
        )
        process.start()
        return process

    def run(self) -> int:
        reuse_port_socket(self.host, self.port).close()  # a taken port fails here, once
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self._stop.set())
        workers = [self._start() for _ in range(self.n)]
        code = 0
        while not self._stop.wait(0.5):
            for i, worker in enumerate(workers):
                if worker.is_alive():
                    continue
                if worker.exitcode == STARTUP_FAILURE:
                    log.error("a worker could not start (exit %s): stopping", worker.exitcode)
                    code = STARTUP_FAILURE
                    self._stop.set()
                    break
                log.warning("worker %s exited (%s): restarting it", worker.pid, worker.exitcode)
                workers[i] = self._start()
        self.shutdown(workers)
        return code

    @staticmethod
    def shutdown(workers: list[BaseProcess]) -> None:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()  # SIGTERM: uvicorn finishes the requests in flight
        deadline = time.monotonic() + DRAIN_S
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
            if worker.is_alive():
                worker.kill()
                worker.join()
