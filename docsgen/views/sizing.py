"""The online sizing benchmark's results view: scoutless against the published
allocators, per seed and workflow."""

from __future__ import annotations

from typing import Any

from docsgen.results_pages import (
    Table,
    at,
    figure,
    fmt,
    label,
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
