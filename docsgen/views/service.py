"""The service's results views: latency and throughput, the bound against a bare
FastAPI app, the database work per request."""

from __future__ import annotations

from typing import Any

from docsgen.results_pages import (
    Cell,
    Table,
    at,
    figure,
    grid,
    label,
)

SERVE_CELLS = (
    "db_c1",
    "db_c8",
    "db_c32",
    "post_c1",
    "post_c8",
    "post_c32",
    "post_batch_1000",
    "post_batch_1000_columns",
    "post_batch_1000_c2",
)


SERVE_FIELDS = ("p50_ms", "p99_ms", "requests_per_s", "tasks_per_s")


def serve_tables(doc: dict[str, Any]) -> list[Table]:
    tables = []
    verdict = doc.get("verdict", {})
    goals = [k for k, v in verdict.items() if isinstance(v, dict)]
    tables.append(
        Table(
            "Goals",
            ["goal", "measured (median)", "goal", "met"],
            [
                [
                    label(g),
                    figure(doc, ("verdict", g, "value")),
                    figure(doc, ("verdict", g, "goal")),
                    figure(doc, ("verdict", g, "met")),
                ]
                for g in goals
            ],
        )
    )
    for backend in ("sqlite", "postgresql"):
        cells = [c for c in SERVE_CELLS if isinstance(at(doc, ("results", backend, c)), dict)]
        if cells:
            tables.append(
                grid(
                    doc,
                    ("results", backend),
                    cells,
                    SERVE_FIELDS,
                    f"{backend}: latency and throughput (median of the repeats)",
                    "cell",
                    "db_cN: GET /v1/tasks/{id}/prediction with N connections; "
                    "post_cN: POST one task; post_batch_1000: POST 1,000-task batches.",
                )
            )
            tables.append(
                grid(
                    doc,
                    ("results", backend, "single_task_in_process"),
                    ("fetch_ms", "features_ms"),
                    ("p50", "p99"),
                    f"{backend}: one task's read and features in process (ms)",
                )
            )
    return tables + _vs_bare(doc)


def _vs_bare(doc: dict[str, Any]) -> list[Table]:
    """The service against a bare FastAPI app under the same client (medians, ratios)."""
    rows = [
        [label(backend), label(cell),
         figure(doc, ("results", "vs_bare", backend, cell, "service", "requests_per_s")),
         figure(doc, ("results", "vs_bare", backend, cell, "bare", "requests_per_s")),
         figure(doc, ("results", "vs_bare", backend, cell, "throughput_ratio")),
         figure(doc, ("results", "vs_bare", backend, cell, "service", "p99_ms")),
         figure(doc, ("results", "vs_bare", backend, cell, "bare", "p99_ms")),
         figure(doc, ("results", "vs_bare", backend, cell, "p99_ratio")),
         figure(doc, ("results", "vs_bare", backend, cell, "ceiling",
                      "max_throughput_ratio_group_8")),
         figure(doc, ("results", "vs_bare", backend, cell, "ceiling",
                      "must_remain_cpu_ratio_group_8"))]
        for backend, cells in (at(doc, ("results", "vs_bare")) or {}).items()
        for cell in cells
    ]  # fmt: skip
    if not rows:
        return []
    headers = ["database", "cell", "service req/s", "bare req/s", "ratio (goal ≥ 0.7)",
               "service p99 ms", "bare p99 ms", "p99 ratio (goal ≤ 1.5)",
               "ceiling (groups of 8)", "CPU bound (groups of 8)"]  # fmt: skip
    note = ("post_c8: POST one task, 8 connections; db_c8: GET /v1/tasks/{id}/prediction, 8 "
            "connections. Servers on core 1, client on core 0, runs interleaved. Ceiling: the "
            "highest ratio one core allows with no cost beyond the bare app's whole request "
            "and the models' own work (in-process CPU of Pipeline.run_many per request, groups "
            "of 8). CPU bound: the bare app's CPU per request over the CPU no request can skip "
            "(the bare app's, preprocess, run_many, its committed log rows and, by id, the "
            "task's read and features), the bound whatever the machine's other load.")  # fmt: skip
    return [Table("Against a bare FastAPI app", headers, rows, note), *_at_groups(doc)]


def _at_groups(doc: dict[str, Any]) -> list[Table]:
    """The bound at the groups the service formed in those runs (``at_observed_groups``)."""
    def part(backend: str, cell: str, *key: str) -> Cell:
        return figure(doc, ("results", "vs_bare", backend, cell, "at_observed_groups", *key))

    rows = [
        [label(backend), label(cell),
         *(part(backend, cell, "mean_group", s) for s in ("model", "log", "fetch")),
         *(part(backend, cell, "cpu_ms_per_request", s)
           for s in ("preprocess", "run_many", "compiled", "log_write", "task_read")),
         part(backend, cell, "python_ceiling"), part(backend, cell, "compiled_ceiling")]
        for backend, cells in (at(doc, ("results", "vs_bare")) or {}).items()
        for cell in cells
        if at(doc, ("results", "vs_bare", backend, cell, "at_observed_groups"))
    ]  # fmt: skip
    if not rows:
        return []
    headers = ["database", "cell", "model group", "log group", "read group", "preprocess ms",
               "run_many ms", "compiled ms", "log ms", "read ms", "ceiling, this code",
               "ceiling, all compiled"]  # fmt: skip
    note = ("The mean groups the service formed in the runs (from its /metrics), and each "
            "stage's in-process CPU per request at those groups. Ceiling, this code: the bare "
            "app's CPU over it plus preprocess, run_many, the log, by id the read, and the "
            "request's validation and answer JSON (pydantic-core, orjson; ~0.004 ms), the rest "
            "of HTTP and the thread hand-offs free. All compiled: preprocess and run_many cut "
            "to their compiled part (the trees' walk and the cost kernels).")  # fmt: skip
    return [Table("The bound at the service's own groups", headers, rows, note)]


DB_PATH_FIGURES = (("old", "cpu_ms"), ("new", "cpu_ms"), ("cpu_ratio",),
                   ("old", "wall_ms"), ("new", "wall_ms"), ("wall_ratio",))  # fmt: skip


def db_paths_tables(doc: dict[str, Any]) -> list[Table]:
    """Per database, work and group size: old and new path per request, CPU and wall."""
    rows = [
        [label(db), label(work), label(group),
         *(figure(doc, ("results", db, work, group, *f)) for f in DB_PATH_FIGURES)]
        for db, entry in (doc.get("results") or {}).items()
        for work in ("task_read", "log_insert")
        for group in entry.get(work, {})
    ]  # fmt: skip
    columns = ["database", "work", "group", "old CPU ms", "new CPU ms", "CPU new ÷ old",
               "old wall ms", "new wall ms", "wall new ÷ old"]  # fmt: skip
    return [Table("Per request: the previous path against the current one", columns, rows,
                  "old: a group's tasks read one statement each, the log rows inserted in a "
                  "transaction; new: the group in one statement (PostgreSQL), the rows in "
                  "one autocommitted INSERT. CPU of the service's process only.")]  # fmt: skip
