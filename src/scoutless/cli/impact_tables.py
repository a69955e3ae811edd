"""Rich tables of the rollout's impact: figures per arm, per window, arm differences."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


#: figures shown per window (the rest are in the per-arm table and the HTML page)
WINDOW_FIGURES = ("first_attempt_success", "walltime_kills", "memory_kills", "first_prod_job_h")
#: windows the terminal shows, the latest ones (the HTML page plots every window)
MAX_WINDOWS = 20


def _num(value: float) -> str:
    from scoutless.ops.report import significant

    return significant(value)


def _figure(name: str) -> str:
    """A figure's name (as ``rollout.guard_figure`` spells it) with its unit, how the tasks
    are pooled (mean, not median) and its better direction."""
    from scoutless.ops.figure_labels import figure_label

    label = figure_label(name)
    return (
        f"{name} [dim]({label.unit}; {label.pooled}; {label.arrow})[/dim]" if label.unit else name
    )


def give_impact(fmt: str, console: Console, report: Any, verdict: str | None) -> None:
    """The impact in ``fmt``: the three tables drawn, or their rows as JSON or CSV (the
    per-arm and per-window figures and the arms' differences; the verdict in JSON)."""
    from dataclasses import asdict

    import pandas as pd

    from scoutless.cli.output import give, records

    tables = {"per_arm": report.per_arm, "per_window": report.per_window,
              "differences": pd.DataFrame([asdict(d) for d in report.differences])}  # fmt: skip
    document = {"n_tasks": report.n_tasks, "verdict": verdict,
                **{name: records(frame) for name, frame in tables.items()}}  # fmt: skip

    def draw() -> None:
        print_per_arm(console, report)
        print_per_window(console, report)
        print_differences(console, report)

    give(fmt, draw, tables, document=document)


def print_per_arm(console: Console, report: Any) -> None:
    from rich.table import Table

    frame = report.per_arm
    if frame.empty:
        console.print("[dim]no tasks with figures yet[/dim]")
        return
    arms = sorted(frame["arm"].unique())
    table = Table(title=f"impact per arm ({report.n_tasks} tasks)")
    table.add_column("figure")
    for arm in arms:
        table.add_column(arm, justify="right")
    for figure, group in frame.groupby("figure", sort=False):
        by_arm = group.set_index("arm")
        cells = [
            f"{_num(by_arm.at[a, 'value'])} [dim]({by_arm.at[a, 'n_tasks']})[/dim]"
            if a in by_arm.index else "-"
            for a in arms
        ]  # fmt: skip
        if any(a in by_arm.index and math.isfinite(by_arm.at[a, "value"]) for a in arms):
            table.add_row(_figure(str(figure)), *cells)
    console.print(table)


def print_per_window(console: Console, report: Any) -> None:
    from rich.table import Table

    frame = report.per_window
    frame = frame[frame["figure"].isin(WINDOW_FIGURES)]
    if frame.empty:
        return
    wide = frame.pivot_table(index=["window_start", "arm"], columns="figure", values="value")
    starts = sorted(wide.index.get_level_values("window_start").unique())
    title = "impact per window and arm"
    if len(starts) > MAX_WINDOWS:
        wide = wide[wide.index.get_level_values("window_start") >= starts[-MAX_WINDOWS]]
        title += f" (the last {MAX_WINDOWS} of {len(starts)} windows; --html plots them all)"
    table = Table(title=title)
    for name in ("window", "arm", *[f for f in WINDOW_FIGURES if f in wide.columns]):
        table.add_column(name, justify="left" if name in ("window", "arm") else "right")
    for (start, arm), row in wide.iterrows():
        cells = [_num(row[f]) for f in WINDOW_FIGURES if f in wide.columns]
        table.add_row(f"{start:%Y-%m-%d %H:%M}", str(arm), *cells)
    console.print(table)


def print_differences(console: Console, report: Any) -> None:
    from rich.table import Table

    if not report.differences:
        console.print("[dim]no canary and control tasks to compare yet[/dim]")
        return
    first = report.differences[0]
    table = Table(title=f"{first.arm} − {first.baseline} (bootstrap interval over tasks)")
    for name in ("figure", "difference", "interval", "tasks"):
        table.add_column(name, justify="left" if name == "figure" else "right")
    from scoutless.ops.report import excludes_zero

    for d in report.differences:
        if not math.isfinite(d.value):
            continue
        marked = excludes_zero(d)
        table.add_row(("✱ " if marked else "") + _figure(d.figure), _num(d.value),
                      f"[{_num(d.lo)}, {_num(d.hi)}]", f"{d.n_arm:,}/{d.n_baseline:,}",
                      style="bold" if marked else "")  # fmt: skip
    console.print(table)
    console.print("[dim]✱ bold: the interval excludes zero[/dim]")
