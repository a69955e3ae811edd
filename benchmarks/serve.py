"""Service latency and throughput: the real server in a subprocess, driven by concurrent clients.

Prints JSON: p50/p95/p99 latency (ms) and requests/s for single-task requests at
concurrency 1, 8 and 32, and tasks/s for batches of 1,000 tasks. Goals on 2 cores:
single-task p99 <= 20 ms at concurrency 8, >= 1,000 requests/s, >= 20,000 tasks/s batched.

    python benchmarks/serve.py [--bundle DIR] [--requests 2000] [--workers 1]

Without ``--bundle`` a tiny bundle is trained first (a few seconds). The load generator
is a minimal keep-alive HTTP/1.1 client on asyncio, so the client costs as little CPU as
possible on a machine it shares with the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

from scoutless.features.spec import PANDA_FEATURES
from scoutless.history.table import TrainingTable
from scoutless.targets.bins import load_bins
from scoutless.targets.spec import class_col, value_col


def demo_table(n: int = 600, seed: int = 0) -> TrainingTable:
    """A small learnable table: class depends on processing type and cores."""
    rng = np.random.default_rng(seed)
    kinds = np.array(["evgen", "simul", "reco", "deriv", "merge"])
    kind = rng.integers(0, len(kinds), n)
    frame = pd.DataFrame({s.name: [None] * n for s in PANDA_FEATURES})
    frame["processingtype"] = kinds[kind]
    frame["prodsourcelabel"] = np.where(rng.random(n) < 0.8, "managed", "user")
    for spec in PANDA_FEATURES:
        if spec.kind == "numerical":
            frame[spec.name] = rng.lognormal(3, 1, n)
    frame["corecount"] = rng.choice([1.0, 8.0], n)
    bins = load_bins()
    scale = {"memory": 700.0, "cputime": 60.0, "io": 300.0, "walltime": 9000.0}
    for target, b in bins.items():
        values = scale[target] * (1 + kind) * rng.lognormal(0, 0.3, n)
        frame[value_col(target)] = values
        frame[class_col(target)] = b.classify(values)
    frame["split_random"] = np.where(rng.random(n) < 0.2, "test", "train")
    return TrainingTable(frame, list(PANDA_FEATURES), bins)


def request_rows(n: int, seed: int = 1) -> list[dict]:
    table = demo_table(max(n, 50), seed)
    rows = table.X().head(n)
    return json.loads(rows.to_json(orient="records"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RawClient:
    """One keep-alive HTTP/1.1 connection; POSTs JSON and reads the status line + body."""

    def __init__(self, port: int) -> None:
        self.port = port

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def post(self, path: str, body: bytes) -> int:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        self.writer.write(head + body)
        status_line = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        await self.reader.readexactly(length)
        return int(status_line.split()[1])

    def close(self) -> None:
        self.writer.close()


async def drive(port: int, body: bytes, n_requests: int, concurrency: int) -> dict:
    latencies: list[float] = []
    failures = 0
    remaining = n_requests

    async def worker() -> None:
        nonlocal remaining, failures
        client = RawClient(port)
        await client.connect()
        while remaining > 0:
            remaining -= 1
            start = time.perf_counter()
            status = await client.post("/v1/predict", body)
            latencies.append(time.perf_counter() - start)
            failures += status != 200
        client.close()

    start = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(concurrency)])
    elapsed = time.perf_counter() - start
    ms = np.asarray(latencies) * 1e3
    return {
        "concurrency": concurrency,
        "requests": len(latencies),
        "failures": failures,
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2),
        "p99_ms": round(float(np.percentile(ms, 99)), 2),
        "requests_per_s": round(len(latencies) / elapsed, 1),
    }


def start_server(bundle: Path, db_url: str, workers: int) -> tuple[subprocess.Popen, int]:
    port = free_port()
    cmd = [sys.executable, "-c", "from scoutless.cli.main import app; app()", "serve",
           "--bundle", str(bundle), "--db", db_url, "--port", str(port),
           "--workers", str(workers)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc, port
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise TimeoutError("server did not become ready")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bundle = args.bundle
        if bundle is None:
            from scoutless.training import train_bundle

            bundle = train_bundle(
                demo_table(), Path(tmp) / "bundle", progress=False, max_epochs=3, n_jobs=1
            )
        proc, port = start_server(bundle, f"sqlite:///{tmp}/serve.sqlite", args.workers)
        try:
            single = json.dumps({"tasks": request_rows(1)}).encode()
            batch = json.dumps({"tasks": request_rows(1000)}).encode()
            asyncio.run(drive(port, single, 100, 4))  # warm-up
            results = {
                f"single_c{c}": asyncio.run(drive(port, single, args.requests, c))
                for c in (1, 8, 32)
            }
            batched = asyncio.run(drive(port, batch, args.batches, 2))
            batched["tasks_per_s"] = round(batched["requests_per_s"] * 1000, 1)
            results["batch_1000"] = batched
        finally:
            proc.terminate()
            proc.wait(30)
    report = {
        "benchmark": "serve",
        "cpus": os.cpu_count(),
        "workers": args.workers,
        "results": results,
        "goals": {"single_c8_p99_ms": 20, "single_requests_per_s": 1000, "tasks_per_s": 20000},
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
