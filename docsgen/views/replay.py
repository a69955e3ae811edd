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
    rest = {k: v for k, v in doc.items() if k not in ("arms", "rehearsal")}
    return [checks, *_rehearsal_tables(doc), widths, *_arm_tables(doc, sizes),
            every_figure(rest, "Every figure", skip=("runs",))]  # fmt: skip


def _rehearsal_tables(doc: dict[str, Any]) -> list[Table]:
    """The online arm against the A/A rehearsal, per size (none where either did not run)."""
    sizes = sorted(at(doc, ("rehearsal",)) or {}, key=int)
    if not sizes:
        return []
    cols = (("online", "value"), ("online", "lo"), ("online", "hi"), ("aa", "value"),
            ("aa", "lo"), ("aa", "hi"), ("aa_half_width",), ("margin",), ("met",),
            ("below_zero",))  # fmt: skip
    rows = [[label(size), *(figure(doc, ("rehearsal", size, *c)) for c in cols)]
            for size in sizes]  # fmt: skip
    headers = ["tasks", "online: canary − control", "lo", "hi", "A/A: canary − control", "lo",
               "hi", "A/A half-width", "half-width − online hi", "online hi < A/A half-width",
               "online hi < 0"]  # fmt: skip
    return [Table(
        "Memory kills per job: the online arm against an A/A rehearsal", headers, rows,
        "The same history, bundle, draw and sizes; the A/A rehearsal runs the canary's tasks "
        "as the control's (scouts and all), so its difference is the draw's noise alone and "
        "its half-width ((hi − lo) ÷ 2) the difference noise makes. Goal: the online arm's "
        "upper end below it.",
    )]  # fmt: skip


def _arm_tables(doc: dict[str, Any], sizes: list[str]) -> list[Table]:
    """Per arm rehearsed: its runs, then every figure's canary − control at the large size."""
    arms = list(at(doc, ("arms",)) or {})
    if not arms:
        return []
    cols = ("tasks", "jobs_written", "replay_s", "largest_relative_gap")
    runs = [[label(arm), label(size), figure(doc, ("arms", arm, "runs", size, "arms", "canary")),
             figure(doc, ("arms", arm, "runs", size, "arms", "control")),
             *(figure(doc, ("arms", arm, "runs", size, c)) for c in cols)]
            for arm in arms for size in sizes]  # fmt: skip
    table = Table("The rehearsal per canary arm", ["arm", "size", "canary tasks",
                  "control tasks", *cols], runs)  # fmt: skip
    large = sizes[-1]
    rows = []
    for name in at(doc, ("width_ratio_by_figure",)) or {}:
        cells = [label(figure_label(name).shown)]
        for arm in arms:
            base = ("arms", arm, "runs", large, "differences", name)
            cells += [figure(doc, (*base, k)) for k in ("value", "lo", "hi")]
        rows.append(cells)
    headers = ["figure", *(f"{arm}{k}" for arm in arms for k in ("", ": lo", ": hi"))]
    per_arm = Table(f"Canary − control per arm, {large} tasks", headers, rows,
                    "selective: the listener's arm (tasks the allocation would scout stay "
                    "out); hybrid: every task eligible; online: the online sizer on the "
                    "canary's tasks; control: the A/A rehearsal.")  # fmt: skip
    return [table, per_arm]


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
        note = ("bounded by: the reference that misses the row's goal too (oracle: perfect "
                "foresight; bayes: the decision fed each task's true distribution): for the "
                "hybrid against the scouts a miss there is not the model's to win; for "
                "online's goals the figure a miss is weighed against (the issue grants "
                "completion P90 that bound)")  # fmt: skip
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
