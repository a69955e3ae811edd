"""The replay's section of report.html: rows and figures from a replay.json document."""

from __future__ import annotations

from typing import Any

from scoutless.replay.checks import BAYES_TOLERANCE, GAP_GOAL, replay_checks
from scoutless.replay.plots import replay_figures
from scoutless.replay.tables import CHECK_TITLES, ROWS, cell, check_line, check_lines


def replay_section(document: dict[str, Any]) -> dict[str, Any]:
    """Rows (label, one cell per strategy) and figures of the replay section."""
    strategies = document["strategies"]
    return {
        "names": list(strategies),
        "rows": [
            (label, [cell(entry, path, digits) for entry in strategies.values()])
            for label, path, digits in ROWS
        ],
        "figures": replay_figures(document),
        "checks": check_lines(document, markup=False),
        "check_notes": check_notes(document),
        "config": document.get("config", {}),
        "workload": document.get("workload", {}),
    }


#: per check group, what it compares ({metric}: the row's metric)
CHECK_COMPARES = {
    "first_job": "the predicted strategy's median wait for a first production job against the "
    "scouts', same tasks, same simulated site",
    "hybrid_vs_scouts": "hybrid (predict, keep scouts where unsure) against scouts on the same "
    "tasks: {metric}",
    "gap_closed": "the share of the scouts' distance to oracle (perfect knowledge) that hybrid "
    "recovers: {metric}",
    "predicted_vs_bayes": "predicted (the model) against bayes (allocating from the generator's "
    "true distribution): {metric}",
    "selective_vs_request": "selective (cost-aware) against the users' own requests: {metric}",
    "bounds": "a lower bound against a strategy on {metric}: oracle (perfect knowledge) costs "
    "no more than any strategy, bayes (the true distribution) no more than predicted",
}


def size_noise(n_tasks: int) -> float:
    """A rough relative noise of a total or percentile over ``n_tasks`` tasks: 2/√n."""
    return 2.0 / max(n_tasks, 1) ** 0.5


def _shortfall(group: str, row: dict[str, Any]) -> float | None:
    """How far a missed check is from its goal, relative (None: not a matter of size)."""
    figures = [v for v in row["figures"].values() if v is not None]
    if group in ("hybrid_vs_scouts", "selective_vs_request", "bounds") and len(figures) == 2:
        ours, theirs = figures
        return abs(ours - theirs) / max(abs(theirs), 1e-12)
    if group == "gap_closed" and row.get("closed") is not None:
        s, o = row["figures"]["scouts"], row["figures"]["oracle"]
        return (GAP_GOAL - row["closed"]) * abs(s - o) / max(abs(s), 1e-12)  # totals' scale
    if group == "predicted_vs_bayes" and row.get("relative_difference") is not None:
        return abs(row["relative_difference"]) - BAYES_TOLERANCE
    return None


def check_notes(document: dict[str, Any]) -> list[dict[str, str]]:
    """Per check of ``check_lines`` (same order): the line, what it compares, and whether a
    miss is expected at this replay's size (a shortfall within the rough 2/√n noise)."""
    checks = document.get("checks") or replay_checks(document["strategies"])
    n = int(document.get("workload", {}).get("tasks") or 0)
    noise = size_noise(n)
    notes = []
    for group in CHECK_TITLES:
        for row in checks.get(group, {}).get("rows", []):
            compares = CHECK_COMPARES.get(group, f"{group}: {{metric}}").format(
                metric=row["metric"]
            )
            notes.append({"line": check_line(group, row, False), "compares": compares,
                          "expected": _expected(group, row, n, noise)})  # fmt: skip
    lines = check_lines(document, markup=False)
    notes += [{"line": line, "compares": "", "expected": ""} for line in lines[len(notes) :]]
    return notes


def _count_noise(row: dict[str, Any]) -> float | None:
    """A count's (kills) relative noise, Poisson: 2·√(a + b) / b (None: not counts)."""
    figures = [v for v in row["figures"].values() if v is not None]
    if len(figures) != 2 or not all(float(v).is_integer() for v in figures):
        return None
    return 2.0 * (sum(figures) ** 0.5) / max(figures[1], 1.0)


def _expected(group: str, row: dict[str, Any], n: int, noise: float) -> str:
    if row["met"] is not False:
        return ""
    if "kills" in row["metric"]:
        noise = _count_noise(row) or noise
    short = _shortfall(group, row)
    if short is None:
        return "not a matter of size"
    if short <= noise:
        return f"missed by {short:.0%}, within the ±{noise:.0%} noise of {n:,} tasks: expected"
    return f"missed by {short:.0%}, beyond the ±{noise:.0%} noise of {n:,} tasks: a real gap"
