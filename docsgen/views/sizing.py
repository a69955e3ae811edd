"""The online sizing benchmarks' results views: scoutless against the published
allocators, per seed and workflow; the online sizer's cost and state at scale, and what its
cap costs; real ATLAS jobs sized job by job."""

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
    """The online sizer's cost at scale: the run's totals, then how cost and state grow with the
    outcomes learnt."""
    cols = ("commit", "max_outcomes_per_type", "jobs", "tasks", "types", "outcomes",
            "ms_per_job", "ms_per_job_last_segment", "rss_mb")  # fmt: skip
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


def sizing_cap_tables(doc: dict[str, Any]) -> list[Table]:
    """Wastage with every outcome kept, with the default cap and with a tight one."""
    summary = at(doc, ("summary",)) or {}
    caps = [f"cap_{summary.get('default_cap')}", f"cap_{summary.get('tight_cap')}"]
    cols = ("workflow", "seed", "uncapped_gbh", "uncapped_failures",
            *(f"{c}_{k}" for c in caps for k in ("gbh", "failures", "ratio")))  # fmt: skip
    heads = tuple(summary)
    return [
        Table("Summary", heads, [[figure(doc, ("summary", c)) for c in heads]],
              "worst gap: the largest wastage over the uncapped one's, less 1"),
        records(doc, ("rows",), cols, "Per workflow and seed", "GB·h wasted; ratio: over uncapped"),
    ]  # fmt: skip


#: the real-ATLAS-jobs benchmark's sides, in the order a reader compares them
ATLAS_SIDES = ("recorded", "ladder", "engine")


def atlas_jobs_tables(doc: dict[str, Any]) -> list[Table]:
    """Per kill factor, each task's waste, kills and slack by side; the goals per task; the
    peers' protocol against the jedi baseline."""
    tasks = list(at(doc, ("tasks",)) or {})
    tables = []
    for factor in at(doc, ("factors",)) or []:
        key = f"{factor:g}"
        for value, what in (("wasted_gbh", "memory GB·h wasted"), ("kills", "kills"),
                            ("slack_gbh", "slack GB·h"),
                            ("wasted_after_lag_gbh", "GB·h wasted once outcomes were known")):  # fmt: skip
            rows = [[label(t), figure(doc, ("tasks", t, "jobs")),
                     *(figure(doc, ("tasks", t, "factors", key, s, value)) for s in ATLAS_SIDES)]
                    for t in tasks]  # fmt: skip
            tables.append(Table(f"Kill factor {key}: {what}", ["task", "jobs", *ATLAS_SIDES],
                                rows))  # fmt: skip
    goal_cols = (("factor_1", "waste_ratio"), ("factor_1", "kills"),
                 ("factor_1", "recorded_kills"), ("factor_1", "waste_met"),
                 ("factor_1", "kills_met"), ("factor_2", "kills"), ("factor_2", "allowed"),
                 ("factor_2", "kills_met"))  # fmt: skip
    tables.append(Table(
        "Goals: the engine against the recorded minramcount",
        ["task", *(f"{g[-1]} ({g[0]})".replace("factor_", "k") for g in goal_cols)],
        [[label(t), *(figure(doc, ("tasks", t, "goals", *g)) for g in goal_cols)]
         for t in tasks],
        "k1: waste ≤ 0.7× the recorded's with fewer kills; k2: kills ≤ max(the recorded's, "
        "1 % of the jobs).",
    ))  # fmt: skip
    peer_cols = ("instances", "scoutless_gbh", "scoutless_failures", "jedi_gbh",
                 "jedi_failures", "met")  # fmt: skip
    peers = list(at(doc, ("peers", "tasks")) or {})
    tables.append(Table(
        "The peers' protocol (seed 1996): scoutless against the jedi baseline",
        ["task", *peer_cols],
        [[label(t), *(figure(doc, ("peers", "tasks", t, c)) for c in peer_cols)]
         for t in peers],
        "GB·h wasted over each task's online 70 %; met: no more waste and no more failures.",
    ))  # fmt: skip
    dropped = sorted({k for t in tasks for k in at(doc, ("tasks", t, "dropped")) or {}})
    tables.append(Table(
        "Rows dropped", ["task", *dropped],
        [[label(t), *(figure(doc, ("tasks", t, "dropped", k)) for k in dropped)] for t in tasks],
    ))  # fmt: skip
    return tables


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
