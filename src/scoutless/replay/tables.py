"""The replay's results for people: one rich table, strategies side by side."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

from scoutless.evaluation.tables import fmt

#: (label, how to read it from a strategy's entry, digits)
ROWS: tuple[tuple[str, str, int], ...] = (
    ("first production job P50 (h)", "time_to_first_job_s.p50", -1),
    ("first production job P90 (h)", "time_to_first_job_s.p90", -1),
    ("task completion P50 (h)", "task_completion_s.p50", -1),
    ("task completion P90 (h)", "task_completion_s.p90", -1),
    ("first-attempt success", "first_attempt_success", 3),
    ("memory kills", "memory_kills", 0),
    ("walltime kills", "walltime_kills", 0),
    ("retries per job", "retries_per_job", 3),
    ("wasted core-hours", "wasted_core_hours", 0),
    ("wasted share", "wasted_share", 3),
    ("memory slack (GB·h)", "memory_slack_gb_hours", 0),
    ("tasks broken / exhausted", "tasks_broken", 0),
)


def value_at(entry: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        entry = entry.get(key) if isinstance(entry, dict) else None
    return entry


def cell(entry: dict[str, Any], path: str, digits: int) -> str:
    if path == "tasks_broken":
        return f"{entry['tasks_broken']} / {entry['tasks_exhausted']}"
    value = value_at(entry, path)
    if digits < 0:  # seconds shown in hours
        return fmt(None if value is None else value / 3600.0, 2)
    if digits == 0 and isinstance(value, float):
        return f"{value:,.0f}"
    return fmt(value, digits)


def replay_table(document: dict[str, Any]) -> Table:
    strategies = document["strategies"]
    table = Table(title="replay: strategies on the same history", box=box.SIMPLE_HEAVY)
    table.add_column("metric", style="bold")
    for name in strategies:
        table.add_column(name, justify="right")
    for label, path, digits in ROWS:
        table.add_row(label, *(cell(entry, path, digits) for entry in strategies.values()))
    return table


def replay_goals(
    document: dict[str, Any],
) -> list[tuple[str, float | None, float | None, bool | None]]:
    """Issue 10's goals: (what, measured, bound, met) — None where a strategy is missing."""
    s = document["strategies"]
    scouts, predicted, hybrid = (s.get(n) for n in ("scouts", "predicted", "hybrid"))
    goals: list[tuple[str, float | None, float | None, bool | None]] = []
    if scouts and predicted:
        wait = value_at(scouts, "time_to_first_job_s.p50")
        got = value_at(predicted, "time_to_first_job_s.p50")
        bound = None if wait is None else 0.01 * wait
        ok = None if got is None or bound is None else got <= bound
        goals.append(("predicted P50 first production job ≤ 1 % of scouts' (s)", got, bound, ok))
    if scouts and hybrid:
        got, bound = hybrid["wasted_core_hours"], scouts["wasted_core_hours"]
        goals.append(("hybrid wasted core-hours ≤ scouts'", got, bound, got <= bound))
        got, bound = hybrid["first_attempt_success"], scouts["first_attempt_success"]
        ok = None if got is None or bound is None else got >= bound
        goals.append(("hybrid first-attempt success ≥ scouts'", got, bound, ok))
    return goals


def headline_line(document: dict[str, Any]) -> str:
    """The replay's goals in one line each, for the demo's headline."""
    lines = []
    for what, got, bound, ok in replay_goals(document):
        mark = "[green]met[/]" if ok else "[red]missed[/]" if ok is False else "–"
        lines.append(f"{what}: {fmt(got)} vs {fmt(bound)} → {mark}")
    return "\n".join(lines)
