"""The replay's results views: the strategies side by side (one run or per size), the
rollout rehearsed on it (canary), and how real the replayed scouts are (realism)."""

from __future__ import annotations

from typing import Any

from docsgen.results_pages import (
    Table,
    at,
    every_figure,
    figure,
    grid,
    label,
    leaves,
)
from scoutless.ops.figure_labels import figure_label

TARGETS = ("memory", "cputime", "io", "walltime")


def realism_tables(doc: dict[str, Any]) -> list[Table]:
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
    tables.append(_per_side(doc, "within_task", within, "Within-task spread"))
    tables.append(
        _per_side(doc, "scout_class_agreement", TARGETS, "Scouts' class = whole task's class")
    )
    return tables


def _per_side(doc: dict[str, Any], key: str, cols: tuple[str, ...], title: str) -> Table:
    """One row per side (real, synthetic), the figures under ``(side, key, col)``."""
    body = [[label(s), *(figure(doc, (s, key, c)) for c in cols)] for s in ("real", "synthetic")]
    return Table(title, ["", *cols], body)


def canary_tables(doc: dict[str, Any]) -> list[Table]:
    """The checks, then per figure the canary − control difference at both sizes with the
    interval widths and how much they narrowed."""
    sizes = sorted(at(doc, ("runs",)) or {}, key=int)
    names = ("equal_within_rounding", "narrows_as_sqrt_n", "narrows_as_sqrt_effective_n")
    checks = grid(doc, ("checks",), names, ("value", "goal", "met"), "The checks", "check")
    rows = []
    for name in at(doc, ("width_ratio_by_figure",)) or {}:
        cells = [label(figure_label(name).shown)]
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


def _earlier(doc: dict[str, Any]) -> list[Table]:
    """``replay.py --merge --earlier``: per size and strategy, each figure as earlier
    decisions measured it on the same demos and as now, with what each earlier one was."""
    earlier = doc.get("earlier") or {}
    labels = list(earlier.get("decisions", {}))
    if not labels:
        return []
    rows = []
    for size, by_label in earlier.get("sizes", {}).items():
        for name in doc["sizes"][size].get("ranking", []):
            for key in ("priced_total_core_hours", "memory_kills", "walltime_kills"):
                rows.append([label(size), label(name), label(key),
                             *(figure(doc, ("earlier", "sizes", size, lab, name, key))
                               if lab in by_label else label("") for lab in labels),
                             figure(doc, ("sizes", size, "strategies", name, key))])  # fmt: skip
    note = "; ".join(f"{lab}: {text}" for lab, text in earlier["decisions"].items())
    return [Table("Against earlier decisions (means over the seeds)",
                  ["size", "strategy", "figure", *labels, "now"], rows, note)]  # fmt: skip


def replay_tables(doc: dict[str, Any]) -> list[Table]:
    """The strategies side by side (one row per metric), then every other figure of the run;
    a ``--sizes`` run: per size its strategies and checks (:func:`_replay_sizes`)."""
    if "sizes" in doc and "runs" in doc:
        return [*_replay_sizes(doc), *_earlier(doc)]
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
