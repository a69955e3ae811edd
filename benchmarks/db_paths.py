"""The service's database work per request: a task's read by id and its prediction-log rows.

Prints JSON: per request, the CPU and wall ms of the task read (``TaskReader.inputs``) and
of the log insert (``PredictionLog.write`` of a group's rows, committed), for groups of
1, 4 and 8 requests, on SQLite and, with ``--pg-url``, PostgreSQL; the previous path
(``old``: a group's tasks read one statement each, the log's rows inserted in a
transaction, ``BEGIN``/``INSERT``/``COMMIT``) against the current one (``new``: the group
in one statement, ``TaskReader.inputs_many``; the rows in one autocommitted ``INSERT``).
Old and new run in turns in the same process, ``--rounds`` times after a warm-up round
(psycopg prepares a statement from its 5th run), each figure the median of the rounds and
``cpu_ratio`` new ÷ old. CPU is this process's only: the database server's, for
PostgreSQL, is not counted (wall time includes the round trips). On SQLite both sides take
the same path (the service reads a local file inline, per request): the pair shows the
noise of the measure.

    python benchmarks/db_paths.py [--db URL] [--pg-url URL] [--requests 400] [--rounds 7]

Without ``--db`` a small synthetic history is generated; an empty ``--pg-url`` database
first gets ``--pg-tasks`` generated tasks (``scripts/services.sh`` prints one as
``SCOUTLESS_BENCH_PG_URL``). The log rows go to a SQLite file beside the history, and to
``--pg-url`` itself, where they are deleted at the end.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from record import add_out, emit, reference_loop_s
from serve_world import chunks, ensure_history, sample_task_ids, small_history

#: requests whose database work is done together (the service's groups at 8 connections
#: hold ~5-8 requests, ~4 task reads on PostgreSQL: `scoutless_groups_total` in its /metrics)
GROUPS = (1, 4, 8)
#: the log rows' request ids start so: the ones written to ``--pg-url`` are deleted after
REQUEST_PREFIX = "db-paths-"

Paths = dict[str, Callable[[list[Any]], object]]


def read_paths(reader: Any) -> Paths:
    """A group's task reads: one statement per task on one connection (the previous
    ``LoopTaskFetch``), or ``inputs_many`` (one statement per group on PostgreSQL)."""
    from scoutless.history.task_reader import outcome_of

    def per_task(ids: list[int]) -> object:
        with reader.one_connection():
            return [outcome_of(reader.inputs, i) for i in ids]

    def grouped(ids: list[int]) -> object:
        with reader.one_connection():
            return reader.inputs_many(ids)

    return {"old": per_task, "new": grouped}


def in_transaction(engine: Any, table: Any, records: list[dict[str, Any]]) -> int:
    """The previous ``insert_few_postgres``: the multi-row INSERT in a transaction."""
    from scoutless.history.db_write import multi_row_insert

    sql, params = multi_row_insert(table, records)
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute(sql, params)
        cursor.close()
        raw.commit()
    finally:
        raw.close()
    return len(records)


@contextmanager
def previous_insert() -> Iterator[None]:
    """``PredictionLog.write`` through :func:`in_transaction` while inside."""
    from scoutless.ops import prediction_log

    current = prediction_log.insert_few_postgres
    prediction_log.insert_few_postgres = in_transaction
    try:
        yield
    finally:
        prediction_log.insert_few_postgres = current


def log_paths(log: Any) -> Paths:
    """A group's log rows committed: in a transaction (old) or one statement (new)."""

    def old(rows: list[dict[str, Any]]) -> object:
        with previous_insert():
            return log.write(rows)

    return {"old": old, "new": log.write}


def log_row(n: int) -> dict[str, Any]:
    """One request's log row, as the service writes it for one task (four targets)."""
    target = {"class_id": 2, "class_label": "2-4GB", "recommended_value": 4000.0,
              "probabilities": [0.05, 0.15, 0.6, 0.2]}  # fmt: skip
    return {"request_id": f"{REQUEST_PREFIX}{n}", "jeditaskid": 2**40 + n, "model_version": "v1",
            "policy": "cost", "alpha": 0.05, "arm": None,
            "predictions": {t: target for t in ("memory", "cputime", "io", "walltime")},
            "features": '{"corecount": 8.0, "processingtype": "simul"}'}  # fmt: skip


def paired(paths: Paths, groups: list[list[Any]], rounds: int) -> dict[str, Any]:
    """Old and new in turns (the first of a pair alternating), every group once a round,
    after a warm-up round: per request, the median CPU and wall ms of the rounds."""
    n = sum(len(g) for g in groups)
    samples: dict[str, list[tuple[float, float]]] = {side: [] for side in paths}
    for round_ in range(rounds + 1):
        order = list(paths) if round_ % 2 == 0 else list(reversed(paths))
        for side in order:
            cpu, wall = time.process_time(), time.perf_counter()
            for group in groups:
                paths[side](group)
            if round_:  # round 0 warms up (connections, prepared statements, caches)
                samples[side].append(
                    ((time.process_time() - cpu) / n * 1e3, (time.perf_counter() - wall) / n * 1e3)
                )
    out: dict[str, Any] = {
        side: {"cpu_ms": round(statistics.median(s[0] for s in pairs), 4),
               "wall_ms": round(statistics.median(s[1] for s in pairs), 4)}
        for side, pairs in samples.items()
    }  # fmt: skip
    out["cpu_ratio"] = round(out["new"]["cpu_ms"] / out["old"]["cpu_ms"], 3)
    out["wall_ratio"] = round(out["new"]["wall_ms"] / out["old"]["wall_ms"], 3)
    return out


def measure(db_url: str, log_url: str, args: argparse.Namespace) -> dict[str, Any]:
    """Both paths of the task read and of the log insert at each group size."""
    from scoutless.history.panda_db import make_engine
    from scoutless.history.task_reader import TaskReader
    from scoutless.ops.prediction_log import PredictionLog

    ids = sample_task_ids(db_url, args.requests)
    reader = TaskReader(make_engine(db_url, create_dirs=False, for_reads=True))
    log = PredictionLog(log_url)
    rows = [log_row(i) for i in range(len(ids))]
    out: dict[str, Any] = {"task_read": {}, "log_insert": {}}
    try:
        for k in GROUPS:
            out["task_read"][f"group_{k}"] = paired(read_paths(reader), chunks(ids, k), args.rounds)
            out["log_insert"][f"group_{k}"] = paired(log_paths(log), chunks(rows, k), args.rounds)
    finally:
        reader.engine.dispose()
        forget_rows(log)
    out["tasks_read"] = len(ids)
    return out


def forget_rows(log: Any) -> None:
    """Delete the benchmark's rows from a server's log (a SQLite file goes with its folder)."""
    from sqlalchemy import text

    if log.engine.dialect.name != "sqlite":
        with log.engine.begin() as conn:
            conn.execute(text("DELETE FROM scoutless_task_predictions WHERE request_id LIKE :p"),
                         {"p": f"{REQUEST_PREFIX}%"})  # fmt: skip
    log.engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="history with tasks (default: a small synthetic one)")
    parser.add_argument("--pg-url", help="the same kind of history in PostgreSQL")
    parser.add_argument("--pg-tasks", type=int, default=2000,
                        help="tasks generated into --pg-url when it holds none")  # fmt: skip
    parser.add_argument("--requests", type=int, default=400, help="requests per round and cell")
    parser.add_argument("--rounds", type=int, default=7)
    add_out(parser)
    args = parser.parse_args()
    speed_before = reference_loop_s()
    with tempfile.TemporaryDirectory() as tmp:
        db_url = args.db or small_history(Path(tmp))
        results = {"sqlite": measure(db_url, f"sqlite:///{tmp}/log.sqlite", args)}
        if args.pg_url:
            pg_url = ensure_history(args.pg_url, args.pg_tasks)
            results["postgresql"] = measure(pg_url, pg_url, args)
    report = {"benchmark": "db_paths", "groups": list(GROUPS), "rounds": args.rounds,
              "results": results}  # fmt: skip
    emit(report, args.out, speed_before, indent=1)


if __name__ == "__main__":
    main()
