"""The service against a bare FastAPI app under the same client: the same routes
with no work behind them, both servers pinned to one core and the client to the other, runs
interleaved so a busy moment of a shared machine hits both alike, medians of the repeats,
and the ratios of throughput and p99. A helper module of ``serve.py`` (its ``--vs-bare``
and ``--only-vs-bare``), not a benchmark of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

import httpx
import numpy as np

from load_client import (
    by_id,
    drive,
    free_port,
    post,
    start_command,
    start_server,
    tree_cpu_seconds,
)
from serve_world import request_rows, sample_task_ids
from stage_cpu import pipeline_cpu_ms, remaining_cpu_ms
from throughput_bound import at_groups, ceiling

#: the bare FastAPI app the service is compared with: the same routes, no work but parsing
#: the body and answering a fixed JSON object (what the framework and server cost)
BARE_APP = """
import sys
import uvicorn
from fastapi import FastAPI, Request

app = FastAPI()
ANSWER = {"request_id": "r", "model_version": "bare", "tasks": []}


@app.post("/v1/predict")
async def predict(request: Request) -> dict:
    await request.json()
    return ANSWER


@app.get("/v1/tasks/{jeditaskid}/prediction")
async def task(jeditaskid: int) -> dict:
    return ANSWER


@app.get("/readyz")
async def ready() -> dict:
    return {}


uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""
#: throughput at least this share of the bare app's, p99 at most this multiple
VS_BARE_GOALS = {"throughput_ratio": 0.7, "p99_ratio": 1.5}
#: the token the compared service requires (a deployment off loopback has one)
BENCH_TOKEN = "bench-token-0123456789abcdef"


def vs_bare(bundle: Path, db_url: str, log_url: str, args: argparse.Namespace) -> dict:
    """The service against a bare FastAPI app under the same client: both servers pinned to
    core 1, the client to core 0, runs interleaved (service, bare, service, bare …) so a
    busy moment hits both alike; each figure the median of ``--repeats`` runs, and the
    ratios service / bare. Single-task POST and task by id, 8 connections, log on."""
    ids = sample_task_ids(db_url, 5000)
    os.sched_setaffinity(0, {1})  # the servers' core, idle until they start
    pipeline_cpu = pipeline_cpu_ms(bundle)
    pipeline_cpu |= remaining_cpu_ms(bundle, db_url, log_url, ids)
    os.sched_setaffinity(0, {0})
    auth = f"Authorization: Bearer {BENCH_TOKEN}\r\n"
    ours, our_port = start_server(bundle, db_url, log_url, 1, cpus="1",
                                  env={"SCOUTLESS_SERVICE__TOKENS": f"bench predict,read {BENCH_TOKEN}"})  # fmt: skip
    bare, bare_port = start_command([sys.executable, "-c", BARE_APP, str(port := free_port())],
                               port, "1", None)  # fmt: skip
    single = json.dumps({"tasks": request_rows(1)}).encode()
    cells = {"post_c8": post(single), "db_c8": by_id(ids)}
    runs: dict = {(c, side): [] for c in cells for side in ("service", "bare")}
    try:
        for p in (our_port, bare_port):  # warm-up
            asyncio.run(drive(p, by_id(ids), 200, 4, auth))
        for _ in range(args.repeats):
            for cell, requests in cells.items():
                for side, (proc, p) in (("service", (ours, our_port)), ("bare", (bare, bare_port))):
                    before = group_counts(p) if side == "service" else {}
                    cpu = tree_cpu_seconds(proc.pid)
                    run = asyncio.run(drive(p, requests, args.requests, 8, auth))
                    run["cpu_ms_per_request"] = (
                        (tree_cpu_seconds(proc.pid) - cpu) / args.requests * 1e3
                    )
                    if side == "service":
                        run["mean_group"] = mean_groups(before, group_counts(p))
                    runs[cell, side].append(run)
    finally:
        for proc in (ours, bare):
            proc.terminate()
            proc.wait(30)
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    out = {cell: _ratios(runs[cell, "service"], runs[cell, "bare"]) for cell in cells}
    for cell, figures in out.items():
        by_id_cell = cell == "db_c8"
        figures["ceiling"] = ceiling(pipeline_cpu, figures["bare"], by_id=by_id_cell)
        figures["at_observed_groups"] = at_groups(
            pipeline_cpu, figures["bare"], figures["mean_group"], by_id=by_id_cell
        )
    return out


def group_counts(port: int) -> dict[str, tuple[float, float]]:
    """The service's ``scoutless_groups_total`` and ``scoutless_group_items_total`` by
    stage, from its ``/metrics`` (read outside the timed runs)."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30,
                     headers={"Authorization": f"Bearer {BENCH_TOKEN}"}).text  # fmt: skip
    return parse_group_counts(text)


def parse_group_counts(text: str) -> dict[str, tuple[float, float]]:
    """(groups, items) by stage from a Prometheus exposition of the service's metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    found: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(text):
        column = {"scoutless_groups": 0, "scoutless_group_items": 1}.get(family.name)
        for sample in family.samples if column is not None else ():
            if sample.name.endswith("_total"):
                found.setdefault(sample.labels["stage"], [0.0, 0.0])[column] = sample.value
    return {stage: (g, n) for stage, (g, n) in found.items()}


def mean_groups(before: dict, after: dict) -> dict[str, float]:
    """Mean items a group held during one run, by stage (stages that formed none left out)."""
    out = {}
    for stage, (groups, items) in after.items():
        g0, n0 = before.get(stage, (0.0, 0.0))
        if groups > g0:
            out[stage] = round((items - n0) / (groups - g0), 2)
    return out


def _ratios(service: list[dict], bare: list[dict]) -> dict:
    def median(rows: list[dict], key: str) -> float:
        return float(np.median([r[key] for r in rows]))

    out = {side: {"requests_per_s": round(median(rows, "requests_per_s"), 1),
                  "p50_ms": round(median(rows, "p50_ms"), 2),
                  "p99_ms": round(median(rows, "p99_ms"), 2),
                  "cpu_ms_per_request": round(median(rows, "cpu_ms_per_request"), 3),
                  "failures": sum(r["failures"] for r in rows)}
           for side, rows in (("service", service), ("bare", bare))}  # fmt: skip
    out["throughput_ratio"] = round(
        out["service"]["requests_per_s"] / out["bare"]["requests_per_s"], 3
    )
    out["p99_ratio"] = round(out["service"]["p99_ms"] / out["bare"]["p99_ms"], 3)
    out["mean_group"] = {
        stage: round(float(np.median([r["mean_group"][stage] for r in service
                                      if stage in r.get("mean_group", {})])), 2)
        for stage in sorted({k for r in service for k in r.get("mean_group", {})})
    }  # fmt: skip
    out["stages_mean_ms"] = {
        k: round(float(np.median([r["stages_mean_ms"][k] for r in service
                                  if k in r["stages_mean_ms"]])), 3)
        for k in sorted({k for r in service for k in r["stages_mean_ms"]})
    }  # fmt: skip
    return out
