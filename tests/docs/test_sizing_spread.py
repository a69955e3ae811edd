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


def test_the_trade_off_is_plotted_per_workflow_and_the_cold_cells_tabled() -> None:
    curve = [{"penalty": p, "wastage_gbh": w, "failures": f}
             for p, w, f in ((0.0, 1.0, 9), (1.0, 2.0, 3), (4.0, 4.0, 1))]  # fmt: skip
    doc = _doc() | {"trade_off": {
        "penalties": [0.0, 1.0, 4.0], "prior_weight": 4.0, "count": 2, "met": 1,
        "cells": [{"seed": 1, "workflow": wf, "curve": curve, "met": wf == "iwd",
                   "baselines": {"vpa": {"wastage_gbh": 3.0, "failures": b}},
                   "not_dominated": [] if wf == "iwd" else ["vpa"]}
                  for wf, b in (("iwd", 2), ("mag", 0))]}}  # fmt: skip
    doc["over_cells"]["cold"] = {"wastage_met": 1, "failures_met": 0, "cells": [
        {"seed": 1, "workflow": "iwd", "ratio": 0.8, "best_baseline": "vpa",
         "wastage_met": True, "failures_met": False}]}  # fmt: skip
    tables = spread_tables(doc)
    trade = next(t for t in tables if t.title.startswith("Failures as a trade"))
    assert render_table(trade).count("<circle") == 2 * (3 + 1) and "<polyline" in trade.svg
    assert [c.text for c in trade.rows[1]][-2:] == ['["vpa"]', "no"]
    cold = next(t for t in tables if t.title.startswith("Cold"))
    assert [c.text for c in cold.rows[0]] == ["1", "iwd", "0.8", "vpa", "yes", "no"]


def test_the_spread_is_plotted_one_point_per_cell_and_tabled() -> None:
    tables = spread_tables(_doc())
    text = "\n".join(render_table(t) for t in tables)
    assert text.count("<circle") == 4 and "goal 0.6" in text
    ratio = next(t for t in tables if t.title == "Ratio per workflow and seed")
    assert [[c.text for c in row] for row in ratio.rows] == [["iwd", "0.6", "0.7"], ["mag", "1.2", "1.2"]]
    assert tables[0].rows[0][1].text == "0.9"
