"""The models' results views: quality and training time, real traces walk-forward,
the tree walker's speed, the served value against the Bayes value."""

from __future__ import annotations

from typing import Any

from docsgen.results_pages import (
    Table,
    at,
    figure,
    label,
    records,
)

TRAIN_METRICS = (
    ("accuracy", "Accuracy"),
    ("macro_f1", "Macro-F1"),
    ("risk_under_allocation_rate", "Under-allocation of the risk policy at α = 0.05"),
    ("risk_over_allocation_median", "Median allocated ÷ needed under the risk policy"),
)


def train_tables(doc: dict[str, Any]) -> list[Table]:
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


def xgb_inference_tables(doc: dict[str, Any]) -> list[Table]:
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


METRIC_TITLES = {"macro_f1": "Macro-F1", "accuracy": "Accuracy"}


REAL_TRACE_MODELS = ("user_request", "last2", "scouts", "xgb", "dnn", "served")


def real_traces_tables(doc: dict[str, Any]) -> list[Table]:
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


VALUE_FIGURES = ("under_allocation", "median_ratio", "ratio", "fair")


def values_tables(doc: dict[str, Any]) -> list[Table]:
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


def fast_paths_tables(doc: dict[str, Any]) -> list[Table]:
    cols = ("computation", "rows", "threshold", "small_path", "small_us", "numpy_us", "ratio")
    return [
        records(
            doc,
            ("results",),
            cols,
            "µs per call: each small path against its numpy definition on the same rows",
            "small_path: the rows are within the threshold, so the service takes the small "
            "path; ratio: the numpy definition's time over the small path's.",
        )
    ]
