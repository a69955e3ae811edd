"""The service against a bare FastAPI app under the same client (issue 38): the same routes
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
from collections.abc import Iterator
from contextlib import contextmanager
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
from serve_world import chunks, request_rows, sample_task_ids

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
#: throughput at least this share of the bare app's, p99 at most this multiple (issue 38)
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


#: requests computed together by ``Pipeline.run_many`` in the ceiling (the service's groups
#: at 8 connections hold ~5-8: `scoutless_groups_total` in its /metrics)
CEILING_GROUPS = (1, 4, 8)
#: group sizes measured in process, for the cost at the groups the service formed
MEASURED_GROUPS = tuple(range(1, 9))


def pipeline_cpu_ms(bundle: Path, reps: int = 200) -> dict[str, float]:
    """In-process CPU ms per request of what every request costs the service beyond
    answering HTTP: ``preprocess`` of one posted task, and ``Pipeline.run_many`` (models,
    the default policy's decisions, answer and log rows) per request at group sizes
    :data:`MEASURED_GROUPS`, and ``compiled_k``, the part of it inside the compiled code
    (:func:`compiled_timer`). The single task of the ``post_c8`` cell."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from scoutless.config import get_settings
    from scoutless.service.pipeline import Pipeline
    from scoutless.service.serving import load_bundle_default

    policy = get_settings().allocation.default_policy
    # the service's own loader: with the trees' compiled walk, as the server runs them
    pipeline = Pipeline(load_bundle_default(bundle), None, ThreadPoolExecutor(1))
    rows = request_rows(1)

    def per_call(call, n: int, rounds: int = 3) -> float:  # type: ignore[no-untyped-def]
        """The least of ``rounds`` means (a busy moment only ever adds)."""
        for _ in range(max(reps // 10, 5)):
            call()
        means = []
        for _ in range(rounds):
            start = time.process_time()
            for _ in range(reps):
                call()
            means.append((time.process_time() - start) / reps / n * 1e3)
        return min(means)

    out = {"preprocess": per_call(lambda: pipeline.preprocess(rows), 1)}
    out |= request_io_ms(pipeline, rows, policy, per_call)
    for k in MEASURED_GROUPS:
        prepared = [pipeline.preprocess(rows) for _ in range(k)]
        ids = [f"r{i}" for i in range(k)]
        out[f"run_many_{k}"] = per_call(
            lambda p=prepared, i=ids: pipeline.run_many(p, i, policy=policy), k
        )
        with compiled_timer() as spent:
            per_call(lambda p=prepared, i=ids: pipeline.run_many(p, i, policy=policy), k, 1)
        out[f"compiled_{k}"] = spent[0] / (reps + max(reps // 10, 5)) / k * 1e3
    return {k: round(v, 4) for k, v in out.items()}


def request_io_ms(pipeline, rows: list[dict], policy: str, per_call) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """CPU ms of the two things a request does in compiled libraries besides the models:
    ``request_validation``, the posted body parsed into the request's model (pydantic-core,
    ``parse_predict_request``) less the ``json.loads`` the bare app does too, and
    ``answer_json``, the answer written (orjson) as the service builds it."""
    import orjson

    from scoutless.service.pipeline import JSON_OPTS
    from scoutless.service.routes.predict import parse_predict_request

    body = json.dumps({"tasks": rows}).encode()
    outcome = pipeline.run_many([pipeline.preprocess(rows)], ["r0"], policy=policy)[0]
    answer = {"request_id": "r0", "model_version": pipeline.version,
              "model_versions": dict.fromkeys(outcome.class_counts, pipeline.version),
              "policy": policy, **outcome.answer_fields(), "errors": {},
              "timings_ms": outcome.timings_ms}  # fmt: skip
    parse = per_call(lambda: parse_predict_request(body), 1)
    return {
        "request_validation": max(0.0, parse - per_call(lambda: json.loads(body), 1)),
        "answer_json": per_call(lambda: orjson.dumps(answer, option=JSON_OPTS), 1),
    }


@contextmanager
def compiled_timer() -> Iterator[list[float]]:
    """Seconds spent inside the compiled code (the trees' walk and the cost grid's kernels,
    :mod:`scoutless.compiled`) while the block runs, in ``spent[0]``: each kernel wrapped in
    a timer (``perf_counter``, ~0.1 µs a call, on an idle core where wall is CPU)."""
    import time

    from scoutless.allocation import cost_kernels
    from scoutless.models import tree_walk

    spent = [0.0]

    def timed(fn):  # type: ignore[no-untyped-def]
        def call(*a):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            try:
                return fn(*a)
            finally:
                spent[0] += time.perf_counter() - start

        return call

    walk, kernels = tree_walk._CODE.active, cost_kernels._CODE.active
    if walk is None or kernels is None:
        raise RuntimeError("the compiled kernels are not loaded (numba)")
    tree_walk._CODE.active = timed(walk)
    cost_kernels._CODE.active = {name: timed(fn) for name, fn in kernels.items()}
    try:
        yield spent
    finally:
        tree_walk._CODE.active, cost_kernels._CODE.active = walk, kernels


def remaining_cpu_ms(bundle: Path, db_url: str, log_url: str, ids: list[int],
                     reps: int = 200) -> dict[str, float]:  # fmt: skip
    """In-process CPU ms per request of the two other things a request must do beyond the
    bare app's work and ``pipeline_cpu_ms``: write its prediction-log rows in a committed
    transaction (``PredictionLog.write`` of a group of ``k`` requests' rows, the service's
    log setting, on the cell's log database; the database server's own CPU, for
    PostgreSQL, not counted) and, for a task by id, read the task and compute its features
    (``task_read_k``: ``TaskReader.inputs_many`` of a group of ``k`` requests, as the
    service's ``LoopTaskFetch`` reads them, + ``features_of``)."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    from scoutless.config import get_settings
    from scoutless.history.panda_db import make_engine
    from scoutless.history.task_reader import TaskReader
    from scoutless.ops.prediction_log import PredictionLog
    from scoutless.service.pipeline import Pipeline
    from scoutless.service.serving import load_bundle_default

    settings = get_settings()
    pipeline = Pipeline(load_bundle_default(bundle), None, ThreadPoolExecutor(1))
    log = PredictionLog(log_url, synchronous=settings.service.log_synchronous)
    rows = request_rows(1)
    out: dict[str, float] = {}
    for k in MEASURED_GROUPS:
        prepared = [pipeline.preprocess(rows) for _ in range(k)]
        outcomes = pipeline.run_many(prepared, [f"bench-log-{i}" for i in range(k)],
                                     policy=settings.allocation.default_policy)  # fmt: skip
        group = [r for o in outcomes for r in o.log_rows]
        n = max(reps // k, 50)
        start = time.process_time()
        for _ in range(n):
            log.write(group)
        out[f"log_write_{k}"] = (time.process_time() - start) / n / k * 1e3
    log.engine.dispose()
    reader = TaskReader(make_engine(db_url, create_dirs=False, for_reads=True))
    for k in MEASURED_GROUPS:
        out[f"task_read_{k}"] = grouped_read_cpu_ms(reader, ids, k, reps)
    reader.engine.dispose()
    return {k: round(v, 4) for k, v in out.items()}


def grouped_read_cpu_ms(reader, ids: list[int], k: int, reps: int) -> float:  # type: ignore[no-untyped-def]
    """CPU ms per request of reading ``reps`` tasks ``k`` at a time, as the service does
    on a database server (one statement per group on PostgreSQL; SQLite reads each task
    inline), and computing their features. A warm-up group first (psycopg prepares a
    statement from its 5th run: the first groups would count the preparing)."""
    import time

    from scoutless.features.extract import features_of

    groups = chunks(ids[:reps], k)
    for group in groups[:6]:
        reader.inputs_many(group)
    start = time.process_time()
    for group in groups:
        with reader.one_connection():
            for inputs in reader.inputs_many(group):
                if isinstance(inputs, Exception):  # sampled tasks are there: a real failure
                    raise inputs
                features_of(*inputs)
    return (time.process_time() - start) / (len(groups) * k) * 1e3


def ceiling(pipeline_cpu: dict[str, float], bare: dict, *, by_id: bool = False) -> dict:
    """The highest throughput ratio this service can reach on one core: were its HTTP,
    logging and thread hand-offs as cheap as the bare app's whole request, a request would
    still cost the bare app's CPU plus ``preprocess`` plus its share of ``run_many``, so at
    most 1000 / that many requests a second, against the bare app's measured rate
    (``max_throughput_ratio_group_k``). ``must_remain_ratio_group_k`` adds what else a
    request cannot skip: its committed log rows (``log_write_k``) and, by id, the task's
    read at that group size (``task_read_k``); ``must_remain_cpu_ratio_group_k`` is the bare app's CPU per
    request over that floor, the same bound where both servers get the same share of a
    busy core (the measured rate then lags the bare app's own CPU)."""
    out: dict = {"pipeline_cpu_ms_per_request": pipeline_cpu}
    for k in CEILING_GROUPS:
        floor_ms = (
            bare["cpu_ms_per_request"] + pipeline_cpu["preprocess"] + pipeline_cpu[f"run_many_{k}"]
        )
        out[f"max_throughput_ratio_group_{k}"] = round(
            min(1.0, 1000 / floor_ms / bare["requests_per_s"]), 3
        )
        if f"log_write_{k}" in pipeline_cpu:
            floor_ms += pipeline_cpu[f"log_write_{k}"]
            floor_ms += pipeline_cpu[f"task_read_{k}"] if by_id else 0.0
            out[f"must_remain_cpu_ms_group_{k}"] = round(floor_ms, 3)
            out[f"must_remain_ratio_group_{k}"] = round(
                min(1.0, 1000 / floor_ms / bare["requests_per_s"]), 3
            )
            out[f"must_remain_cpu_ratio_group_{k}"] = round(
                bare["cpu_ms_per_request"] / floor_ms, 3
            )
    return out


def at_groups(
    pipeline_cpu: dict[str, float], bare: dict, mean_group: dict[str, float], *, by_id: bool
) -> dict:
    """The bound where the service really was: each stage's in-process CPU per request at
    the mean group it formed in the runs (``mean_group``, from ``/metrics``; a group's cost
    interpolated between the measured sizes). ``python_ceiling``: the bare app's CPU over
    it plus ``preprocess``, ``run_many``, the log's commit, by id the read, and the
    request's validation and answer in their compiled libraries (``request_io``): what
    this code could reach were the rest of HTTP and the hand-offs free.
    ``compiled_ceiling``: the same with ``preprocess`` and ``run_many`` cut to their
    compiled part (the trees' walk and the cost kernels, ``compiled_k``): what compiling
    every other step of the decision path could reach at these groups, all else free."""
    model = mean_group.get("model", 1.0)
    log = mean_group.get("log", 1.0)
    fetch = mean_group.get("fetch", 1.0)
    parts = {
        "preprocess": pipeline_cpu["preprocess"],
        "run_many": _per_request(pipeline_cpu, "run_many", model),
        "compiled": _per_request(pipeline_cpu, "compiled", model),
        "log_write": _per_request(pipeline_cpu, "log_write", log),
        "task_read": _per_request(pipeline_cpu, "task_read", fetch) if by_id else 0.0,
    }
    parts["request_io"] = pipeline_cpu["answer_json"] + (
        0.0 if by_id else pipeline_cpu["request_validation"]  # by id: no body
    )
    rest = parts["log_write"] + parts["task_read"] + parts["request_io"]
    python_ms = bare["cpu_ms_per_request"] + parts["preprocess"] + parts["run_many"] + rest
    compiled_ms = bare["cpu_ms_per_request"] + parts["compiled"] + rest
    return {
        "mean_group": mean_group,
        "cpu_ms_per_request": {k: round(v, 4) for k, v in parts.items()},
        "python_ceiling": round(bare["cpu_ms_per_request"] / python_ms, 3),
        "compiled_ceiling": round(bare["cpu_ms_per_request"] / compiled_ms, 3),
    }


def _per_request(cpu: dict[str, float], stage: str, group: float) -> float:
    """``stage``'s CPU ms per request in a group of ``group`` (a mean: the group's whole
    cost interpolated linearly between the two measured sizes around it)."""
    sizes = [k for k in MEASURED_GROUPS if f"{stage}_{k}" in cpu]
    g = min(max(group, sizes[0]), sizes[-1])
    lo = max(k for k in sizes if k <= g)
    hi = min(k for k in sizes if k >= g)
    whole_lo, whole_hi = cpu[f"{stage}_{lo}"] * lo, cpu[f"{stage}_{hi}"] * hi
    whole = whole_lo if hi == lo else whole_lo + (whole_hi - whole_lo) * (g - lo) / (hi - lo)
    return whole / g


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
