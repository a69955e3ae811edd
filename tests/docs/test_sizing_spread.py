"""The sizing page plots the ratio's spread: one point per workflow-seed cell."""

from __future__ import annotations

from docsgen.results_site import render_table
from docsgen.views.sizing import spread_tables


def _doc() -> dict:
    cells = [
        {"seed": s, "workflow": wf, "ratio": r, "best_baseline": "vpa",
         "wastage_met": r <= 1, "failures_met": True}
        for s in (1, 2) for wf, r in (("iwd", 0.5 + s / 10), ("mag", 1.2))
    ]  # fmt: skip
    return {"seeds": [1, 2], "over_cells": {
        "cells": cells, "count": 4, "median_ratio": {"median": 0.9, "low": 0.6, "high": 1.2},
        "wastage_met_share": 0.5, "failures_met_share": 1.0}}  # fmt: skip


def test_the_spread_is_plotted_one_point_per_cell_and_tabled() -> None:
    tables = spread_tables(_doc())
    text = "\n".join(render_table(t) for t in tables)
    assert text.count("<circle") == 4 and "goal 0.6" in text
    ratio = next(t for t in tables if t.title == "Ratio per workflow and seed")
    assert [[c.text for c in row] for row in ratio.rows] == [["iwd", "0.6", "0.7"], ["mag", "1.2", "1.2"]]
    assert tables[0].rows[0][1].text == "0.9"
