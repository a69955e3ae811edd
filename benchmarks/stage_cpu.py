"""What each stage of a request costs the service in process, in CPU ms per request: the
pipeline's ``preprocess`` and ``run_many`` at each group size, the compiled part of it, the
request's validation and answer JSON, the prediction log's commit and a task's read by id.
A helper module of ``bare_compare.py`` (the bound it reports beside the ratios), not a
benchmark of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scoutless.config import Settings
from serve_world import chunks, request_rows

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
    pipeline = Pipeline(load_bundle_default(bundle), None, ThreadPoolExecutor(1), settings=Settings())
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
    grids = {target: timed(fn) for target, fn in kernels["grids"].items()}
    cost_kernels._CODE.active = {**kernels, "grids": grids, "choice": timed(kernels["choice"])}
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
    pipeline = Pipeline(load_bundle_default(bundle), None, ThreadPoolExecutor(1), settings=Settings())
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
