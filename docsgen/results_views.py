# Left whole: one concept, the table of per-benchmark results views (a short function each).
"""Which benchmarks have a results page, and how each one's JSON is laid out as tables.

A benchmark without a view gets every figure of its JSON in one table; a view only
chooses which figures sit side by side.
"""

from __future__ import annotations

from typing import Any

from docsgen.results_pages import (
    Benchmark,
    Cell,
    Table,
    at,
    every_figure,
    figure,
    fmt,
    grid,
    label,
    leaves,
    records,
)

TARGETS = ("memory", "cputime", "io", "walltime")


TRAIN_METRICS = (
    ("accuracy", "Accuracy"),
    ("macro_f1", "Macro-F1"),
    ("risk_under_allocation_rate", "Under-allocation of the risk policy at α = 0.05"),
    ("risk_over_allocation_median", "Median allocated ÷ needed under the risk policy"),
)


def _train(doc: dict[str, Any]) -> list[Table]:
    """Per training run: each metric per target and family (Bayes where known), the time."""
    tables = []
    for i, run in enumerate(doc.get("results", [])):
        quality = run.get("test_quality", {})
        cols = list(next(iter(quality.values()), {}))
        for metric, title in TRAIN_METRICS:
            rows = [
                [
                    label(t),
                    *(figure(doc, ("results", i, "test_quality", t, f, metric)) for f in cols),
                ]
                for t in quality
            ]
            note = (
                "bayes: the best any classifier of the submission-time features can do on "
                "this data (the generator keeps the latent truth)."
                if metric == "accuracy"
                else ""
            )
            tables.append(
                Table(f"{title} on the test split, {fmt_tasks(run)}", ["target", *cols], rows, note)
            )
        seconds = run.get("train_seconds_per_family", {})
        tables.append(
            Table(
                "Training seconds per family (all four targets)",
                ["family", "seconds"],
                [
                    [label(f), figure(doc, ("results", i, "train_seconds_per_family", f))]
                    for f in seconds
                ],
            )
        )
    return tables


def fmt_tasks(run: dict[str, Any]) -> str:
    n = run.get("n_tasks")
    return f"{n:,} tasks" if isinstance(n, int) else "one table"


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


def _serve(doc: dict[str, Any]) -> list[Table]:
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


def _realism(doc: dict[str, Any]) -> list[Table]:
    stats = ("p5", "median", "p95", "median_abs_log")
    tables = [
        grid(
            doc,
            (side, "ratios"),
            TARGETS,
            ("n", *stats),
            f"{side}: scouts' value ÷ whole task's value",
            "target",
        )
        for side in ("real", "synthetic")
    ]
    within = ("tasks", "pss_per_core_cv_median", "wall_cv_median", "mixed_core_share")
    tables.append(
        Table(
            "Within-task spread",
            ["", *within],
            [
                [label(s), *(figure(doc, (s, "within_task", c)) for c in within)]
                for s in ("real", "synthetic")
            ],
        )
    )
    tables.append(
        Table(
            "Scouts' class = whole task's class",
            ["", *TARGETS],
            [
                [label(s), *(figure(doc, (s, "scout_class_agreement", t)) for t in TARGETS)]
                for s in ("real", "synthetic")
            ],
        )
    )
    return tables


def _xgb_inference(doc: dict[str, Any]) -> list[Table]:
    cols = (
        "rounds",
        "nodes",
        "rows",
        "fits",
        "numpy_us",
        "compiled_us",
        "inplace_predict_us",
        "max_margin_difference",
        "max_margin_difference_compiled",
    )
    return [
        records(
            doc,
            ("results",),
            cols,
            "µs per call: numpy trees and their compiled walk against inplace_predict",
            "fits: within the size the service walks the trees for (compiled in the service, "
            "numpy elsewhere); max_margin_difference 0.0: the margins are equal to the last bit.",
        )
    ]


DB_PATH_FIGURES = (("old", "cpu_ms"), ("new", "cpu_ms"), ("cpu_ratio",),
                   ("old", "wall_ms"), ("new", "wall_ms"), ("wall_ratio",))  # fmt: skip


def _db_paths(doc: dict[str, Any]) -> list[Table]:
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


def _canary(doc: dict[str, Any]) -> list[Table]:
    """The checks, then per figure the canary − control difference at both sizes with the
    interval widths and how much they narrowed."""
    sizes = sorted(at(doc, ("runs",)) or {}, key=int)
    names = ("equal_within_rounding", "narrows_as_sqrt_n", "narrows_as_sqrt_effective_n")
    checks = grid(doc, ("checks",), names, ("value", "goal", "met"), "The checks", "check")
    rows = []
    for name in at(doc, ("width_ratio_by_figure",)) or {}:
        cells = [label(name)]
        for size in sizes:
            base = ("runs", size, "differences", name)
            cells += [figure(doc, (*base, "value")), figure(doc, (*base, "width"))]
        rows.append([*cells, figure(doc, ("width_ratio_by_figure", name)),
                     figure(doc, ("width_ratio_over_sqrt_effective_n", name))])  # fmt: skip
    headers = ["figure"]
    for size in sizes:
        headers += [f"canary − control, {size} tasks", f"interval width, {size}"]
    widths = Table(
        "Canary − control and its bootstrap interval",
        [*headers, "width ratio", "÷ √(effective n ratio)"],
        rows,
        "width ratio: the small replay's interval width over the large one's; √(n ratio) "
        "expected (`width_ratio_expected`) where tasks weigh alike, √ of the effective "
        "tasks' ratio (Kish) for a ratio of sums: 1 in the last column is exact.",
    )
    return [checks, widths, every_figure(doc, "Every figure", skip=("runs",))]


METRIC_TITLES = {"macro_f1": "Macro-F1", "accuracy": "Accuracy"}
REAL_TRACE_MODELS = ("user_request", "last2", "scouts", "xgb", "dnn", "served")


def _real_traces(doc: dict[str, Any]) -> list[Table]:
    """Per trace and target: each model's metric (mean over seeds), and the goal's gains."""
    cells = [
        (trace, t)
        for trace, targets in doc.get("results", {}).items()
        for t, entry in targets.items()
        if isinstance(entry, dict)
    ]
    models = [
        m
        for m in REAL_TRACE_MODELS
        if any(at(doc, ("results", tr, t, "models", m)) for tr, t in cells)
    ]
    tables = []
    for metric in ("macro_f1", "accuracy"):
        rows = [
            [
                label(tr),
                label(t),
                figure(doc, ("results", tr, t, "rows_test")),
                *(figure(doc, ("results", tr, t, "models", m, metric, "mean")) for m in models),
            ]
            for tr, t in cells
        ]
        tables.append(
            Table(
                f"{METRIC_TITLES[metric]}, mean over the seeds, pooled over the "
                "walk-forward periods",
                ["trace", "target", "test rows", *models],
                rows,
            )
        )
    gains = ("macro_f1_gain", "accuracy_gain", "met")
    rows = [
        [label(tr), label(t), *(figure(doc, ("results", tr, t, "goal", g)) for g in gains)]
        for tr, t in cells
        if isinstance(at(doc, ("results", tr, t, "goal")), dict)
    ]
    tables.append(
        Table(
            "Goal: served minus the stronger of user_request and last2",
            ["trace", "target", *gains],
            rows,
            "goal: at least +0.05 macro-F1 and no loss of accuracy.",
        )
    )
    return tables + _real_trace_replay(doc)


TRACE_REPLAY_FIGURES = ("first_attempt_success", "wasted_core_hours", "memory_slack_gb_hours",
                        "walltime_kills", "priced_total_core_hours")  # fmt: skip


def _real_trace_replay(doc: dict[str, Any]) -> list[Table]:
    """``--replay``: per trace and strategy, the figures the trace check compares with the
    users' requests, and whether all three are met."""
    rows = [
        [label(tr), label(s), *(figure(doc, ("replay", tr, "strategies", s, m))
                                for m in TRACE_REPLAY_FIGURES),
         figure(doc, ("replay", tr, "vs_request", s, "all_met"))]
        for tr, entry in (doc.get("replay") or {}).items()
        for s in entry.get("strategies", {})
    ]  # fmt: skip
    if not rows:
        return []
    return [Table("replay --trace: each strategy on the test rows, against the users' requests",
                  ["trace", "strategy", *TRACE_REPLAY_FIGURES, "all met vs request"], rows,
                  "all met: wasted core-hours and memory slack at most the request's, "
                  "first-attempt success at least its.")]  # fmt: skip


def strategies_at(doc: Any, path: tuple = ()) -> tuple | None:
    """Where a replay result keeps its per-strategy metrics (a map ``{"scouts": {…,
    "wasted_core_hours": …}, …}``), however the benchmark nests it; None if nowhere."""
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("scouts"), dict) and "wasted_core_hours" in doc["scouts"]:
        return path
    for key, value in doc.items():
        hit = strategies_at(value, (*path, key))
        if hit is not None:
            return hit
    return None


def _replay_sizes(doc: dict[str, Any]) -> list[Table]:
    """``replay.py --sizes``: per size, the strategies' mean figures (least mean priced
    total first) and their spread over the seeds, then every check with both sides' means,
    the goal, the seeds it held in and the verdict."""
    tables = []
    for size, summary in (doc.get("sizes") or {}).items():
        base = ("sizes", size)
        names = summary.get("ranking", [])
        paths = list(summary["spread"][names[0]]) if names else []
        for title, key, split in (("mean", "strategies", True), ("standard deviation", "spread", False)):
            rows = [[label(path), *(figure(doc, (*base, key, n, *(path.split(".") if split else [path])))
                                    for n in names)] for path in paths]  # fmt: skip
            tables.append(Table(f"{size} tasks, {summary['seeds']} seeds: {title}",
                                ["metric", *names], rows))  # fmt: skip
        rows = []
        for group, check in summary.get("checks", {}).items():
            for i, row in enumerate(check["rows"]):
                at_row = (*base, "checks", group, "rows", i)
                sides = [figure(doc, (*at_row, "figures", n, "mean")) for n in row["figures"]]
                rows.append([label(group), label(row["metric"]),
                             label(" vs ".join(row["figures"])), *sides, label(row["goal"]),
                             label(row.get("seeds_met", "")), figure(doc, (*at_row, "met")),
                             label(row.get("bounded_by") or "")])  # fmt: skip
        note = ("bounded by: the reference that does worse than the scouts on that metric "
                "too (oracle: perfect foresight; bayes: the decision fed the truth), so a "
                "miss there is not the model's to win")  # fmt: skip
        tables.append(Table(f"{size} tasks: the checks (means over the seeds)",
                            ["check", "metric", "sides", "first", "second", "goal", "seeds", "met",
                             "bounded by"], rows, note))  # fmt: skip
    return tables


def _replay(doc: dict[str, Any]) -> list[Table]:
    """The strategies side by side (one row per metric), then every other figure of the run;
    a ``--sizes`` run: per size its strategies and checks (:func:`_replay_sizes`)."""
    if "sizes" in doc and "runs" in doc:
        return _replay_sizes(doc)
    base = strategies_at(doc)
    if base is None:
        return []
    names = list(at(doc, base))
    metrics = [p[len(base) + 1 :] for p in leaves(at(doc, base), base) if p[len(base)] == names[0]]
    rows = [
        [label(".".join(map(str, m))), *(figure(doc, (*base, n, *m)) for n in names)]
        for m in metrics
    ]
    note = "times in seconds; wasted: the cores × runtime of killed attempts."
    return [
        Table("Strategies on the same tasks", ["metric", *names], rows, note),
        every_figure(doc, "The run", skip=base),
    ]


SIZING_METHODS = (
    "scoutless", "scoutless_cold", "users_presets", "witt_percentile", "witt_lr_std",
    "witt_lr_std_under", "witt_lr_std_under_own", "tovar", "jedi", "vpa",
)  # fmt: skip


def _sizing(doc: dict[str, Any]) -> list[Table]:
    """Per seed: scoutless against the best published baseline; then every method's
    wastage and failures per workflow."""
    tables = []
    if isinstance(at(doc, ("runs", "1996", "reproduction")), dict):
        cols = ("cells", "max_gap", "worst_cell", "failures_equal", "met")
        row = [figure(doc, ("runs", "1996", "reproduction", c)) for c in cols]
        tables.append(Table(
            "The baselines against issue 36's table (Sizey's code, seed 1996)", cols, [row],
            "max_gap: the largest relative gap in GB·h over the as-coded rows and std-under "
            "without look-ahead; the check asks for at most 0.02 and equal failures.",
        ))  # fmt: skip
    for seed, run in (doc.get("runs") or {}).items():
        base = ("runs", seed, "workflows")
        names = list(at(doc, base) or {})
        goal_cols = ("best_baseline", "baseline_wastage_gbh", "baseline_failures", "ratio",
                     "wastage_met", "failures_met")  # fmt: skip
        rows = [
            [
                label(wf),
                figure(doc, (*base, wf, "methods", "scoutless", "wastage_gbh")),
                figure(doc, (*base, wf, "methods", "scoutless", "failures")),
                *(figure(doc, (*base, wf, "goal", "scoutless", c)) for c in goal_cols),
            ]
            for wf in names
        ]
        note = "median ratio: " + fmt(at(run, ("summary", "median_ratio")))
        tables.append(Table(
            f"Seed {seed}: scoutless against the best published baseline",
            ["workflow", "GB·h", "failures", *goal_cols], rows,
            f"{note} (goal ≤ 0.6); GB·h wasted over the online 70 % of each workflow.",
        ))  # fmt: skip
        for value, what in (("wastage_gbh", "GB·h wasted"), ("failures", "failed attempts")):
            methods = [m for m in SIZING_METHODS if any(
                isinstance(at(doc, (*base, wf, "methods", m)), dict) for wf in names)]  # fmt: skip
            rows = [
                [label(wf), *(figure(doc, (*base, wf, "methods", m, value)) for m in methods)]
                for wf in names
            ]
            tables.append(Table(f"Seed {seed}: {what} by method", ["workflow", *methods], rows))
    return tables


VALUE_FIGURES = ("under_allocation", "median_ratio", "ratio", "fair")


def _values(doc: dict[str, Any]) -> list[Table]:
    """Per demo size and target: the bundle's value against the Bayes value, and the goal."""
    demos = doc.get("demos") or {}
    rows = [
        [label(name), figure(doc, ("demos", name, "tasks")), label(t),
         *(figure(doc, ("demos", name, "targets", t, "bundle", m)) for m in VALUE_FIGURES),
         *(figure(doc, ("demos", name, "targets", t, "bundle", "fair_95", i)) for i in (0, 1)),
         figure(doc, ("demos", name, "goal")), figure(doc, ("demos", name, "met"))]
        for name, entry in demos.items()
        for t in entry.get("targets", {})
    ]  # fmt: skip
    if not rows:
        return []
    return [Table("The served value against the Bayes value, per demo size",
                  ["demo", "tasks", "target", *VALUE_FIGURES, "fair, 2.5 %", "fair, 97.5 %",
                   "goal (fair ≤)", "met"], rows,
                  "ratio: the median allocated ÷ needed over the Bayes value's at alpha; fair: "
                  "over the Bayes value's at the level under-allocating as often as the "
                  "served value did (the goal's measure), with its 95 % bootstrap interval "
                  "over the demo's test tasks.")]  # fmt: skip


BENCHMARKS: list[Benchmark] = [
    Benchmark(
        "train",
        "Model quality and training time",
        "Accuracy and macro-F1 of every model family on the random test split of a "
        "synthetic PanDA history, next to the Bayes limit, and the training time.",
        "python benchmarks/train.py --tasks 20000 --out results/train.json",
        _train,
    ),
    Benchmark(
        "real_traces",
        "Real traces, walk-forward",
        "Real job logs (Parallel Workloads Archive, ATLAS PanDA job records) imported as "
        "`scoutless import` does and scored walk-forward, retrained weekly, against the "
        "baselines schedulers use today.",
        "python benchmarks/real_traces.py --seeds 42 --out results/real_traces.json",
        _real_traces,
    ),
    Benchmark(
        "replay",
        "Replay: scouts against predictions, on the clock",
        "The same history through the scouts, predicted, hybrid, selective, bayes and "
        "oracle strategies on a simulated clock under PanDA's rules, per demo size and "
        "replay seed: time to the first production job, completion, kills, wasted "
        "core-hours, slack, and each strategy's priced total (the strategies ranked by "
        "it); the checks: the hybrid against the scouts on every metric, oracle and bayes "
        "bounding on the priced total. (`--tasks` without `--sizes`: the replay's own speed.)",
        "python benchmarks/replay.py --sizes 50000,20000,5000 --seeds 3 --workdir scoutless-work/bench "
        "--out results/replay.json",
        _replay,
    ),
    Benchmark(
        "serve",
        "Service latency and throughput",
        "The HTTP service under load on one machine: the database endpoint, single-task "
        "and 1,000-task POSTs, against the service's goals. The load generator shares the "
        "machine, and every answer waits for its prediction-log commit. Without `--bundle` "
        "and `--db` the benchmark trains a small bundle and serves a small generated history; "
        "`--bundle scoutless-work/bundle --db sqlite:///scoutless-work/history.sqlite` "
        "measures the demo's. `vs_bare` compares the service (token required, log on) with "
        "a bare FastAPI app under the same client, servers and client pinned to their own "
        "core: the ratios of throughput and p99, on SQLite and PostgreSQL.",
        "python benchmarks/serve.py --workers 2 --vs-bare --pg-url $SCOUTLESS_BENCH_PG_URL "
        "--out results/serve.json",
        _serve,
    ),
    Benchmark(
        "hostile",
        "The service against a hostile caller",
        "One caller with a token against everyone else, on loopback, the default limits: "
        "64 stalled uploads then 450 good requests (the share refused); four clients "
        "sending bodies of 2.1 million tiny tasks, then of 20 million empty arrays in "
        "`targets`, for 5 s each (the server's peak memory growth and `/healthz` "
        "meanwhile); a real 10,000-task batch; and 300 connections that never finish a "
        "request head (closed by the head timeout).",
        "python benchmarks/hostile.py --out results/hostile.json",
    ),
    Benchmark(
        "db_paths",
        "The service's database work per request",
        "A task's read by id and its prediction-log insert, per request at groups of 1, 4 "
        "and 8 requests, on SQLite and PostgreSQL: the previous per-task read and "
        "transaction against the grouped read (one statement per group on PostgreSQL) and "
        "the one-round-trip insert, run in turns in one process.",
        "python benchmarks/db_paths.py --pg-url $SCOUTLESS_BENCH_PG_URL --out results/db_paths.json",
        _db_paths,
    ),
    Benchmark(
        "listen",
        "PanDA listener end to end",
        "Tasks published as JEDI's status messages over STOMP, predicted by the listener "
        "and applied by the JEDI plugin: lost, duplicated and the latency to the row.",
        "python benchmarks/listen.py --rate 10 --seconds 30 --out results/listen.json",
    ),
    Benchmark(
        "realism",
        "Synthetic scouts against real ones",
        "How far a task's scouts are from the whole task, on real ATLAS tasks and on the "
        "synthetic generator: the replay is only as honest as the scouts it replays.",
        "python benchmarks/realism.py --tasks 20000 --out results/realism.json",
        _realism,
    ),
    Benchmark(
        "promise",
        "The promise kept under a release drift",
        "A bundle trained before a new release raises memory 1.75x for some processing "
        "types, predicting after it with the value policy at alpha: the realised "
        "under-allocation per group, the groups `monitor promise` flags, and the next "
        "window with the calibration refitted on the first.",
        "python benchmarks/promise.py --tasks 8000 --out results/promise.json",
    ),
    Benchmark(
        "canary",
        "A rollout rehearsed on the replay",
        "The replay's canary (share 0.5) written as PanDA's records with `replay "
        "--write-history` and read back by `monitor impact`, at two sizes: the largest "
        "relative gap between the impact's per-arm figures and the replay's own, and how "
        "the bootstrap intervals of canary − control narrow with 4x the tasks.",
        "python benchmarks/canary.py --tasks 2000 8000 --out results/canary.json",
        _canary,
    ),
    Benchmark(
        "sizing",
        "Online sizing against the published allocators",
        "Sizey's six real nf-core traces under the peers' protocol (per task type 30 % "
        "history, 70 % sized online in `train_test_split`'s order; a failed attempt costs "
        "its whole allocation × runtime and is retried): scoutless's engine against Witt's "
        "percentile and regression sizing, Tovar's, the users' presets, JEDI and VPA, for "
        "three seeds; and sized cold, from the other five workflows only.",
        "python benchmarks/sizing.py TRACES_DIR --out results/sizing.json",
        _sizing,
    ),
    Benchmark(
        "generate",
        "Synthetic history generation",
        "Throughput of the synthetic PanDA history generator writing into SQLite.",
        "python benchmarks/generate.py --tasks 50000 --out results/generate.json",
    ),
    Benchmark(
        "targets",
        "Target computation",
        "The four target estimators (PanDA's rules) over job rows, all jobs and scouts only.",
        "python benchmarks/targets.py --jobs 2000000 --out results/targets.json",
    ),
    Benchmark(
        "xgb_inference",
        "XGBoost inference for a few rows",
        "The tree walker (numpy, and compiled as the service runs it) against XGBoost's "
        "inplace_predict, per call.",
        "python benchmarks/xgb_inference.py --out results/xgb_inference.json",
        _xgb_inference,
    ),
    Benchmark(
        "scale",
        "Scale-out on Dask",
        "The Dask build of a Parquet export: wall time, worker memory, spill, and exactness "
        "against the single-process code. The export comes first: `python "
        "benchmarks/scale.py export --tasks N --export DIR`.",
        "python benchmarks/scale.py outofcore --export scale-work/export --out results/scale.json",
    ),
    Benchmark(
        "cli_startup",
        "Command-line start-up",
        "How long `scoutless --help`, `--version`, each verb's and sub-verb's `--help` and "
        "a wrong `--bundle` path take, as the median of fresh interpreters, against `python "
        "-c \"import typer\"` run in turns with them (goal: every `--help` within 2x; the "
        "worst and the median verb's ratio are shown, in wall time and, steadier on a shared "
        "machine, in CPU time (`cpu_…`)). Verbs are imported when they run, "
        "so no help imports torch, scikit-learn, XGBoost, pandas, rich or the settings "
        "(pydantic). Then `scoutless taskparams` filling one task from a demo's bundle of "
        "every family (goal: within 2 s; it reads the models as arrays, without torch or "
        "XGBoost).",
        "python benchmarks/cli_startup.py --repeats 5 --out results/cli_startup.json",
    ),
    Benchmark(
        "values",
        "Values at the Bayes limit, per demo size",
        "The served value (the bundle's value model, calibrated) on a demo's test tasks "
        "against the Bayes value from the generator's truth, at equal under-allocation "
        "(goal: ≤ 1.05× at 20k tasks, ≤ 1.03× at 200k). The demos are the replay "
        "benchmark's and one 200k demo.",
        "python benchmarks/values.py --demos W/demo_20000_42,W/demo_50000_42,"
        "W/demo_200000_42 --out results/values.json",
        _values,
    ),
]
