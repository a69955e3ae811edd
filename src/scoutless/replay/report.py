"""The replay's section of report.html: rows and figures from a replay.json document."""

from __future__ import annotations

from typing import Any

from scoutless.replay.plots import replay_figures
from scoutless.replay.tables import ROWS, cell, check_lines


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
        "config": document.get("config", {}),
        "workload": document.get("workload", {}),
    }
