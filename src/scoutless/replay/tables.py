"""The replay's results for people: one rich table, strategies side by side."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

from scoutless.evaluation.tables import fmt
from scoutless.replay.checks import replay_checks, value_at

#: (label, how to read it from a strategy's entry, digits)
ROWS: tuple[tuple[str, str, int], ...] = (
    ("priced total (core·h)", "priced_total_core_hours", 0),
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
    ("memory slack, relative", "memory_slack_relative", 3),
    ("walltime slack (core·h)", "walltime_slack_core_hours", 0),
    ("walltime slack, relative", "walltime_slack_relative", 3),
    ("tasks broken / exhausted", "tasks_broken", 0),
)


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
    """Strategies side by side, ranked by their priced total where the document has it."""
    strategies = document["strategies"]
    order = [r["strategy"] for r in document.get("ranking", [])] or list(strategies)
    strategies = {name: strategies[name] for name in order}
    title = "replay: strategies on the same history (least priced total first)"
    table = Table(title=title, box=box.SIMPLE_HEAVY)
    table.add_column("metric", style="bold")
    for name in strategies:
        table.add_column(name, justify="right")
    for label, path, digits in ROWS:
        table.add_row(label, *(cell(entry, path, digits) for entry in strategies.values()))
    return table


def replay_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The table's figures as data: one row per strategy and figure, unrounded."""
    rows = []
    for name, entry in document["strategies"].items():
        for label, path, _ in ROWS:
            value = value_at(entry, path)
            rows.append({"strategy": name, "figure": label, "key": path,
                         "value": value / 3600.0 if "_s." in path and value is not None else value})  # fmt: skip
    return rows


#: check group -> how its headline lines begin
CHECK_TITLES = {
    "first_job": "first production job",
    "hybrid_vs_scouts": "hybrid vs scouts",
    "gap_closed": "hybrid vs the scouts' gap to oracle",
    "predicted_vs_bayes": "predicted vs bayes",
    "selective_vs_request": "selective vs the users' requests",
    "bounds": "bounds",
}


def figure(value: float | None) -> str:
    """A check's figure: whole numbers and anything above 100 with thousands apart, three
    decimals otherwise (shares)."""
    if value is None:
        return "–"
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.3f}"


def check_line(group: str, row: dict[str, Any], markup: bool = True) -> str:
    """One check: each side's figure, then the goal, then the verdict."""
    parts = [", ".join(f"{name} {figure(v)}" for name, v in row["figures"].items())]
    if row.get("closed") is not None:
        parts.append(f"closes {row['closed']:.0%} of the gap")
    if row.get("relative_difference") is not None:
        parts.append(f"{row['relative_difference']:+.1%}")
    bound = row.get("bound")
    parts.append(f"goal: {row['goal']}" + (f" (≤ {figure(bound)})" if bound is not None else ""))
    ok = row["met"]
    met, missed = ("[green]met[/]", "[red]missed[/]") if markup else ("met", "missed")
    mark = met if ok else missed if ok is False else row.get("note", "–")
    if ok is False and row.get("bounded_by"):
        mark += f" ({row['bounded_by']} does worse than {list(row['figures'])[1]} too)"
    return f"{CHECK_TITLES.get(group, group)}, {row['metric']}: {'; '.join(parts)} → {mark}"


def check_lines(document: dict[str, Any], markup: bool = True) -> list[str]:
    """The replay's checks one line each (from replay.json's ``checks``, computed again for
    a document written before they were kept), then what was not measured or not run."""
    checks = document.get("checks") or replay_checks(document["strategies"])
    lines = [check_line(group, row, markup) for group in CHECK_TITLES
             for row in checks.get(group, {}).get("rows", [])]  # fmt: skip
    missing = checks.get("hybrid_vs_scouts", {}).get("not_measured", [])
    if missing:
        lines.append(f"not measured by this replay: {', '.join(missing)}")
    for name, why in document.get("skipped", {}).items():
        lines.append(f"{name} not run: {why}")
    return lines


def headline_line(document: dict[str, Any]) -> str:
    """The replay's checks for the demo's headline."""
    return "\n".join(check_lines(document))
