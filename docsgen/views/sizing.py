"""The online sizing benchmarks' results views: scoutless against the published
allocators, per seed and workflow; the engine's cost and state at scale."""

from __future__ import annotations

from typing import Any

from docsgen.results_pages import (
    Table,
    at,
    figure,
    fmt,
    label,
    records,
)

SIZING_METHODS = (
    "scoutless", "scoutless_cold", "users_presets", "witt_percentile", "witt_lr_std",
    "witt_lr_std_under", "witt_lr_std_under_own", "tovar", "jedi", "vpa",
)  # fmt: skip


def sizing_tables(doc: dict[str, Any]) -> list[Table]:
    """Per seed: scoutless against the best published baseline; then every method's
    wastage and failures per workflow."""
    tables = []
    if isinstance(at(doc, ("runs", "1996", "reproduction")), dict):
        cols = ("cells", "max_gap", "worst_cell", "failures_equal", "met")
        row = [figure(doc, ("runs", "1996", "reproduction", c)) for c in cols]
        tables.append(Table(
            "The baselines against Sizey's own code (its table at seed 1996)", cols, [row],
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


#: the online benchmark's checkpoint columns, in the order a reader compares them
ONLINE_COLUMNS = (
    "jobs", "outcomes", "segment_ms_per_job", "cumulative_ms_per_job", "rss_mb",
    "state_bytes_per_type_median", "outcomes_largest_type", "state_bytes_largest_type",
    "state_bytes_per_outcome",
)  # fmt: skip


def online_tables(doc: dict[str, Any]) -> list[Table]:
    """The engine's cost at scale: the run's totals, then how cost and state grow with the
    outcomes learnt."""
    cols = ("commit", "jobs", "tasks", "types", "outcomes", "ms_per_job",
            "ms_per_job_last_segment", "rss_mb")  # fmt: skip
    growth = ("state_bytes_per_added_outcome", "rss_bytes_per_added_outcome",
              "state_bytes_per_type_first", "state_bytes_per_type_last",
              "outcomes_per_type_first", "outcomes_per_type_last")  # fmt: skip
    return [
        Table("The run", cols, [[figure(doc, (c,)) for c in cols]],
              "CPU time of decision + update (allocate, each kill and retry, the outcome), "
              "one core, amortised over the jobs."),
        Table("State growth", growth, [[figure(doc, ("growth", c)) for c in growth]],
              "between the first and the last checkpoint"),
        records(doc, ("checkpoints",), ONLINE_COLUMNS, "At each checkpoint",
                "segment: the jobs since the checkpoint before"),
    ]  # fmt: skip


def online_restart_tables(doc: dict[str, Any]) -> list[Table]:
    """The sizer's state across restarts: whether the killed run allocated as the
    uninterrupted one, then what the database costs per event beside memory."""
    run = ("outcomes", "types", "restarts", "events_reported", "events_reported_twice",
           "events_missing", "mismatches", "identical")  # fmt: skip
    cost = ("ms_per_allocation", "ms_per_learn", "ms_per_learn_over_memory")
    stored = ("types", "outcomes_committed", "state_bytes", "state_bytes_per_type_mean",
              "state_bytes_per_type_max")  # fmt: skip
    backends = [b for b in ("memory", "sqlite", "postgresql") if b in doc]
    return [
        Table("Killed and restarted", run, [[figure(doc, (c,)) for c in run]],
              "every allocation a process printed for an event, against the uninterrupted "
              "run's; an event printed twice was sized again after a kill"),
        Table("Cost per event (ms)", ["sizer", *cost],
              [[label(b), *(figure(doc, (b, c)) if c in doc[b] else label("")
                            for c in cost)] for b in backends],
              "allocation: first (and the retry after a kill); learn: the outcome learnt "
              "and, in a database, committed"),
        Table("In the database at the end", stored,
              [[figure(doc, ("stored", c)) for c in stored]]),
    ]  # fmt: skip
