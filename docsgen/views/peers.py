"""The sizing page's reference tables: the baselines against Sizey's own code run on the
same traces and seeds, cell by cell, and Sizey's own model beside every method on the
instances it sized."""

from __future__ import annotations

from typing import Any

from docsgen.results_pages import Table, at, figure, fmt, label


def peers_code_tables(doc: dict[str, Any]) -> list[Table]:
    """The baselines against Sizey's own code run on the same traces and seeds, cell by
    cell; then Sizey's own model beside every method on the instances it sized."""
    if not isinstance(doc.get("peers_code"), dict):
        return sizey_model_tables(doc)
    cols = ("workflows", "tolerance", "max_gap", "worst_cell", "failures_equal", "met", "seconds")
    cells = ("ours", "theirs", "gap", "failures")
    return [
        Table("The baselines against Sizey's own code, run", cols,
              [[figure(doc, ("peers_code", c)) for c in cols]],
              "Every cell its main.py writes (its model switched off) against this "
              "project's: relative gap in GB·h, failures equal (this project's, its)."
              + (f" Carried {at(doc, ('peers_code', 'carried'))}."
                 if at(doc, ("peers_code", "carried")) else "")),
        Table("Cell by cell (GB·h)", ["seed/workflow/method", *cells],
              [[label(k), *(figure(doc, ("peers_code", "cells", k, c)) for c in cells)]
               for k in at(doc, ("peers_code", "cells")) or {}]),
        Table("Witt's low-wastage regression offline, this project's and its code's", ["cell", *cells],
              [[label(k), *(figure(doc, ("peers_code", "witt_lwr_offline", k, c)) for c in cells)]
               for k in at(doc, ("peers_code", "witt_lwr_offline")) or {}],
              "Beside, not in the verdict: its COBYLA runs in the SciPy of each side's Python."),
        *sizey_model_tables(doc),
    ]  # fmt: skip


def sizey_model_tables(doc: dict[str, Any]) -> list[Table]:
    """Sizey's own model, run by its code on the first online instances of every type,
    and every method on exactly those instances (least wasteful first)."""
    base = ("sizey_model", "workflows")
    cols = ("wastage_gbh", "failures", "instances")
    check = ("cells", "max_gap", "failures_equal", "met")
    tables = []
    for wf in at(doc, base) or {}:
        rows = [[label(m), *(figure(doc, (*base, wf, "methods", m, c)) for c in cols)]
                for m in at(doc, (*base, wf, "ranking")) or []]  # fmt: skip
        tables.append(Table(
            f"Sizey's own model on {wf}: the first {fmt(at(doc, ('sizey_model', 'first')))} "
            "online instances of every type", ["method", *cols], rows,
            "Sizey run by its main.py (arguments " + fmt(at(doc, ("sizey_model", "args")))
            + "), its instances cut to the first of each type; every other method summed over "
            "the same instances of its whole walk. The baselines its run wrote beside, against "
            "this project's on those instances: "
            + ", ".join(f"{c} {_small(at(doc, (*base, wf, 'cross_check', c)))}" for c in check)
            + f". Types the model reached: {len(at(doc, (*base, wf, 'per_type')) or {})} of "
            f"{fmt(at(doc, (*base, wf, 'types')))}; its seconds an instance (its own timing), "
            f"median {fmt(at(doc, (*base, wf, 'model_seconds', 'median')))}."
            + (f" Carried {at(doc, ('sizey_model', 'carried'))}."
               if at(doc, ("sizey_model", "carried")) else "")
            + (f" This project's methods counted again on those instances at this run's "
               f"commit, the model's figures and the cross-check carried from "
               f"{at(doc, ('sizey_model', 'recount', 'from'))} (every baseline's total as "
               f"there: {fmt(at(doc, ('sizey_model', 'recount', 'baselines_equal')))})."
               if at(doc, ("sizey_model", "recount")) else ""),
        ))  # fmt: skip
    return tables


def _small(value: Any) -> str:
    """A figure that may be far below the page's four decimals (a relative gap)."""
    return f"{value:.1e}" if isinstance(value, float) and 0 < abs(value) < 1e-3 else fmt(value)
