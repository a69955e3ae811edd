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
