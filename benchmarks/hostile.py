"""The service against a caller who holds a token and means harm, on loopback.

Prints JSON, one cell per attack, on the real server (``scoutless serve``, one worker, the
default limits) serving a small trained bundle and a generated history:

- ``stalled_uploads``: ``--stalled`` uploads that declare ``Content-Length: 100000`` and
  send a few bytes, held open; then ``--good`` good requests (single-task POSTs and reads
  by id, 8 at a time): the share refused (goal: <= 1 %).
- ``idle``: ``/healthz`` latency with no attack, for comparison (a shared machine's noise).
- ``wide_body``: bodies of ``--wide-tasks`` tiny tasks (~60 MB), sent whole by
  ``--wide-at-once`` clients at once, one after another for ``--wide-seconds``: the
  answers, the server's peak RSS growth while they run (sampled from /proc every 10 ms;
  goal <= 100 MB), what it keeps a second later, and ``/healthz`` latency meanwhile (goal:
  the slowest <= 100 ms). The server and the prober run on one core, the attackers on
  the others.
- ``wide_values``: the same with bodies of one task and ``--wide-values`` empty arrays in
  ``targets`` (~57 MB): the parser would build every one before validating any.
- ``real_batch``: a batch of ``--batch`` real tasks within the limits: answered (200).
- ``unfinished_heads``: ``--heads`` connections that send part of a request head and no
  more: how many the server closes, and when (``service.header_timeout_s``, 10 s).

    python benchmarks/hostile.py [--bundle DIR] [--db URL] --out results/hostile.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from load_client import RawClient, start_server
from record import add_out, emit, reference_loop_s
from serve_world import add_world, request_rows, sample_task_ids, served_world

GOALS = {"refused_share": 0.01, "peak_growth_mb": 100, "healthz_max_ms": 100}


def _post_head(port: int, length: int) -> bytes:
    return (f"POST /v1/predict HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: "
            f"application/json\r\nContent-Length: {length}\r\n\r\n").encode()  # fmt: skip


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=60)


def stalled_uploads(port: int, ids: list[int], n_stalled: int, n_good: int) -> dict:
    """Hold ``n_stalled`` unfinished uploads open, then send ``n_good`` good requests."""
    stalled = [_connect(port) for _ in range(n_stalled)]
    for sock in stalled:
        sock.sendall(_post_head(port, 100_000) + b'{"tasks": [')
    time.sleep(0.5)  # the server has them all before the good requests start
    single = json.dumps({"tasks": request_rows(1)}).encode()

    async def good() -> list[int]:
        statuses: list[int] = []
        queue = list(range(n_good))

        async def worker() -> None:
            client = RawClient(port)
            await client.connect()
            while queue:
                i = queue.pop()
                if i % 2:
                    status, _ = await client.send("POST", "/v1/predict", single)
                else:
                    path = f"/v1/tasks/{ids[i % len(ids)]}/prediction"
                    status, _ = await client.send("GET", path)
                statuses.append(status)
            client.writer.close()

        await asyncio.gather(*(worker() for _ in range(8)))
        return statuses

    start = time.monotonic()
    statuses = asyncio.run(good())
    seconds = time.monotonic() - start
    for sock in stalled:
        sock.close()
    refused = sum(s != 200 for s in statuses)
    return {"stalled": n_stalled, "good": n_good, "refused": refused,
            "refused_share": round(refused / n_good, 4), "seconds": round(seconds, 2),
            "statuses": {str(s): statuses.count(s) for s in sorted(set(statuses))}}  # fmt: skip


def wide_tasks(n_tasks: int) -> bytes:
    task = b'{"processingtype": "reco"}'  # 28 bytes a task, with its comma and space
    return b'{"tasks": [' + b", ".join([task] * n_tasks) + b"]}"


def wide_targets(n_values: int) -> bytes:
    """One task, and millions of empty arrays where the targets' names go."""
    return b'{"task": {}, "targets": [' + b",".join([b"[]"] * n_values) + b"]}"


def _send_and_read(port: int, body: bytes, out: list) -> None:
    """Send the whole body (as an attacker would, whatever the answer) and read the answer."""
    sock = _connect(port)
    answer: list[bytes] = []

    def read() -> None:
        try:
            answer.append(sock.recv(65536))
        except OSError:
            answer.append(b"")

    reader = threading.Thread(target=read)
    reader.start()
    with contextlib.suppress(OSError):  # closed by the server: its answer is read all the same
        sock.sendall(_post_head(port, len(body)) + body)
    reader.join(60)
    sock.close()
    status = answer[0].split(b" ", 2)[1].decode() if answer and answer[0] else "none"
    out.append(status)


def _rss(pid: int) -> int:
    """A process's resident memory in bytes, from /proc (Linux)."""
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def wide_body(port: int, pid: int, body: bytes, at_once: int, seconds: float) -> dict:
    """``at_once`` clients send ``body``, one after another for ``seconds``; the server's
    RSS and ``/healthz`` latency meanwhile."""
    until = time.monotonic() + seconds
    base = _rss(pid)
    peak, done = base, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _rss(pid))
            time.sleep(0.01)

    statuses: list[str] = []

    def attack() -> None:
        while time.monotonic() < until:
            _send_and_read(port, body, statuses)

    senders = [threading.Thread(target=attack) for _ in range(at_once)]
    sampler = threading.Thread(target=sample)
    prober = Prober(port)
    start = time.monotonic()
    for thread in (sampler, *senders):
        thread.start()
    for thread in senders:
        thread.join(seconds + 120)
    took = time.monotonic() - start
    done.set()
    sampler.join(30)
    probes = prober.stop()
    time.sleep(1.0)
    mb = 1024 * 1024
    return {"body_mb": round(len(body) / mb, 1), "at_once": at_once,
            "statuses": {s: statuses.count(s) for s in sorted(set(statuses))},
            "rss_before_mb": round(base / mb, 1),
            "peak_growth_mb": round((peak - base) / mb, 1),
            "kept_after_1s_mb": round((_rss(pid) - base) / mb, 1),
            "seconds": round(took, 2), **_latency("healthz", probes)}  # fmt: skip


def _latency(name: str, ms: list[float]) -> dict:
    return {f"{name}_probes": len(ms), f"{name}_p50_ms": round(float(np.median(ms)), 2),
            f"{name}_p99_ms": round(float(np.percentile(ms, 99)), 2),
            f"{name}_max_ms": round(max(ms), 2)}  # fmt: skip


def _cores() -> tuple[str | None, set[int]]:
    """The server's core (with the prober) and the attackers' cores, apart, so that the
    probes time the server, not the attackers' own load; nothing pinned on one core."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None, set()
    return str(cores[-1]), set(cores[:-1])


class Prober:
    """``GET /healthz`` every 10 ms from a process of its own (this one's threads, busy
    sending, would delay the probes' own timing) on the server's core, until stopped; at
    least 20 probes."""

    def __init__(self, port: int) -> None:
        context = multiprocessing.get_context("fork")
        self.stopped, self.results = context.Event(), context.Queue()
        self.process = context.Process(target=_probe, args=(port, self.stopped, self.results))
        self.process.start()
        server_core = _cores()[0]
        if server_core is not None:
            os.sched_setaffinity(self.process.pid, {int(server_core)})

    def stop(self) -> list[float]:
        self.stopped.set()
        probes: list[float] = self.results.get(timeout=60)
        self.process.join(30)
        return probes


def _probe(port: int, stopped: Any, results: Any) -> None:
    probes: list[float] = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        client.get("/healthz")  # connected before the first timed probe
        while not stopped.is_set() or len(probes) < 20:
            start = time.perf_counter()
            client.get("/healthz")
            probes.append((time.perf_counter() - start) * 1e3)
            time.sleep(0.01)
    results.put(probes)


def real_batch(port: int, n_tasks: int) -> dict:
    """A batch within the limits is answered."""
    body = {"tasks": request_rows(n_tasks), "layout": "columns"}
    start = time.perf_counter()
    answer = httpx.post(f"http://127.0.0.1:{port}/v1/predict", json=body, timeout=300)
    seconds = time.perf_counter() - start
    answered = len(answer.json()["jeditaskids"]) if answer.status_code == 200 else 0
    return {"tasks": n_tasks, "status": answer.status_code, "answered_tasks": answered,
            "seconds": round(seconds, 2)}  # fmt: skip


def unfinished_heads(port: int, n: int, wait_s: float) -> dict:
    """``n`` connections send part of a request head; how many are closed, and when."""
    socks = [_connect(port) for _ in range(n)]
    for sock in socks:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    start = time.monotonic()
    closed_at: list[float] = []
    for sock in socks:
        sock.settimeout(max(0.1, start + wait_s - time.monotonic()))
        try:
            if sock.recv(4096) == b"":
                closed_at.append(time.monotonic() - start)
        except (TimeoutError, OSError):
            pass
        sock.close()
    return {"connections": n, "closed": len(closed_at),
            "last_closed_after_s": round(max(closed_at), 2) if closed_at else None}  # fmt: skip


def verdict(results: dict) -> dict:
    stalled, wide = results["stalled_uploads"], (results["wide_body"], results["wide_values"])
    checks = {
        "refused_share": stalled["refused_share"] <= GOALS["refused_share"],
        "peak_growth_mb": max(w["peak_growth_mb"] for w in wide) <= GOALS["peak_growth_mb"],
        "healthz_max_ms": max(w["healthz_max_ms"] for w in wide) <= GOALS["healthz_max_ms"],
        "real_batch_answered": results["real_batch"]["status"] == 200,
        "heads_closed": results["unfinished_heads"]["closed"]
        == results["unfinished_heads"]["connections"],
    }
    return {**checks, "all_met": all(checks.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_world(parser)
    parser.add_argument("--stalled", type=int, default=64)
    parser.add_argument("--good", type=int, default=450)
    parser.add_argument("--wide-tasks", type=int, default=2_130_975)
    parser.add_argument("--wide-at-once", type=int, default=4)
    parser.add_argument("--wide-seconds", type=float, default=5.0,
                        help="each client sends wide bodies one after another this long")  # fmt: skip
    parser.add_argument("--wide-values", type=int, default=20_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--heads", type=int, default=300)
    add_out(parser)
    args = parser.parse_args()
    speed_before = reference_loop_s()
    with tempfile.TemporaryDirectory() as tmp:
        bundle, db_url = served_world(Path(tmp), args.bundle, args.db)
        ids = sample_task_ids(db_url, args.good)
        server_cpus, client_cpus = _cores()
        proc, port = start_server(bundle, db_url, f"sqlite:///{tmp}/log.sqlite", 1,
                                  cpus=server_cpus)  # fmt: skip
        if client_cpus:
            os.sched_setaffinity(0, client_cpus)
        try:
            from scoutless.config import ServiceSettings

            head_wait = ServiceSettings().header_timeout_s + 10
            idle = Prober(port)
            time.sleep(1.0)
            results = {
                "idle": _latency("healthz", idle.stop()),  # the machine's own noise
                "stalled_uploads": stalled_uploads(port, ids, args.stalled, args.good),
                "wide_body": {"tasks": args.wide_tasks, **wide_body(
                    port, proc.pid, wide_tasks(args.wide_tasks), args.wide_at_once,
                    args.wide_seconds)},
                "wide_values": {"empty_arrays": args.wide_values, **wide_body(
                    port, proc.pid, wide_targets(args.wide_values), args.wide_at_once,
                    args.wide_seconds)},
                "real_batch": real_batch(port, args.batch),
                "unfinished_heads": unfinished_heads(port, args.heads, head_wait),
            }
        finally:
            proc.terminate()
            proc.wait(60)
    report = {"benchmark": "hostile", "verdict": verdict(results), "results": results,
              "goals": GOALS}  # fmt: skip
    emit(report, args.out, speed_before, indent=1)


if __name__ == "__main__":
    main()
