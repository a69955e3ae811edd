"""The load harness of the service benchmarks: a server started in a subprocess (optionally
pinned to cores) and driven by concurrent keep-alive HTTP/1.1 clients on asyncio.

The client is minimal on purpose (a request line, a few headers, the status line and a
``Content-Length`` body), so it costs as little CPU as possible on a machine it shares with
the server. ``drive`` runs one measurement, ``repeated`` takes the median, min and max of
several, and ``tree_cpu_seconds`` reads a server's CPU time (its workers included) from
``/proc``. A helper module of ``serve.py``, not a benchmark of its own.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np

#: every this many requests, the answer's stage timings are read (parsing costs client CPU)
STAGE_SAMPLE = 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RawClient:
    """One keep-alive HTTP/1.1 connection; sends a request, reads the status line + body."""

    def __init__(self, port: int, headers: str = "") -> None:
        self.port = port
        self.headers = headers  # extra header lines, each ending in CRLF

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def send(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{self.headers}"
        if body:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.writer.write((head + "\r\n").encode() + body)
        status_line = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        answer = await self.reader.readexactly(length)
        return int(status_line.split()[1]), answer

    def close(self) -> None:
        self.writer.close()


Request = tuple[str, str, bytes]  # method, path, body


async def drive(
    port: int,
    requests: Callable[[int], Request],
    n_requests: int,
    concurrency: int,
    headers: str = "",
) -> dict:
    """``n_requests`` requests (``requests(i)`` makes the i-th) from ``concurrency`` clients."""
    latencies: list[float] = []
    stages: dict[str, list[float]] = defaultdict(list)
    failures = 0
    sent = 0

    async def worker() -> None:
        nonlocal sent, failures
        client = RawClient(port, headers)
        await client.connect()
        while sent < n_requests:
            i, sent = sent, sent + 1
            start = time.perf_counter()
            status, body = await client.send(*requests(i))
            latencies.append(time.perf_counter() - start)
            failures += status != 200
            if status == 200 and i % STAGE_SAMPLE == 0:  # the server's own stage timings
                for stage, ms in json.loads(body).get("timings_ms", {}).items():
                    stages[stage].append(ms)
        client.close()

    start = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(concurrency)])
    elapsed = time.perf_counter() - start
    ms = np.asarray(latencies) * 1e3
    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "failures": failures,
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
        "requests_per_s": len(latencies) / elapsed,
        "stages_mean_ms": {k: float(np.mean(v)) for k, v in stages.items()},
    }


def repeated(run: Callable[[], dict], repeats: int) -> dict:
    """Run a measurement ``repeats`` times: median, min and max of each figure."""
    runs = [run() for _ in range(repeats)]
    out: dict = {"concurrency": runs[0]["concurrency"], "repeats": repeats,
                 "requests": sum(r["requests"] for r in runs),
                 "failures": sum(r["failures"] for r in runs)}  # fmt: skip
    for key in ("p50_ms", "p99_ms", "requests_per_s"):
        values = [r[key] for r in runs]
        out[key] = round(float(np.median(values)), 2)
        out[f"{key}_range"] = [round(min(values), 2), round(max(values), 2)]
    stage_names = {k for r in runs for k in r["stages_mean_ms"]}
    out["stages_mean_ms"] = {
        k: round(float(np.median([r["stages_mean_ms"][k] for r in runs if k in r["stages_mean_ms"]])), 3)
        for k in sorted(stage_names)
    }  # fmt: skip
    return out


def start_server(
    bundle: Path, db_url: str, log_url: str, workers: int, *, cpus: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen, int]:  # fmt: skip
    port = free_port()
    cmd = [sys.executable, "-c", "from scoutless.cli.main import app; app()", "serve",
           "--bundle", str(bundle), "--db", db_url, "--log-db", log_url, "--port", str(port),
           "--workers", str(workers)]  # fmt: skip
    return start_command(cmd, port, cpus, env)


def start_command(
    cmd: list[str], port: int, cpus: str | None, env: dict[str, str] | None
) -> tuple[subprocess.Popen, int]:
    """Run ``cmd`` (on ``cpus``, a taskset list) until its ``/readyz`` answers 200."""
    if cpus is not None:
        cmd = ["taskset", "-c", cpus, *cmd]
    with tempfile.TemporaryFile() as errors:  # the server keeps its own copy of the fd
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errors,
                                env={**os.environ, **(env or {})})  # fmt: skip
        deadline = time.monotonic() + 600  # a busy shared machine imports torch slowly
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    return proc, port
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        proc.kill()
        errors.seek(0)
        tail = errors.read().decode(errors="replace")[-2000:]
    raise TimeoutError(f"server did not become ready: {tail}")


def post(body: bytes) -> Callable[[int], Request]:
    return lambda _: ("POST", "/v1/predict", body)


def by_id(ids: list[int]) -> Callable[[int], Request]:
    return lambda i: ("GET", f"/v1/tasks/{ids[i % len(ids)]}/prediction", b"")


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its children, from /proc (Linux)."""
    total = 0.0
    pids = [str(pid), *subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                      text=True).stdout.split()]  # fmt: skip
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total
