"""The headline results: a few figures from ``results/*.json``, for the README and the
results index. ``python -m docsgen.headline`` rewrites the README's table from the JSON
files; a test fails while the README's table differs from what they give.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from docsgen.markdown import table
from docsgen.results_pages import at, fmt, load_result
from docsgen.views.replay import strategies_at

TARGETS = ("memory", "cputime", "io", "walltime")
START, END = "<!-- headline:start -->", "<!-- headline:end -->"

Row = tuple[str, str]  # what, figure


def _per_target(quality: dict[str, Any], family: str, metric: str) -> str:
    return ", ".join(f"{t} {fmt(at(quality, (t, family, metric)))}" for t in TARGETS
                     if at(quality, (t, family, metric)) is not None)  # fmt: skip


def _train_rows(doc: dict[str, Any]) -> list[Row]:
    run = at(doc, ("results", 0)) or {}
    quality = run.get("test_quality", {})
    n = fmt(run.get("n_tasks"))
    return [
        (f"DNN test accuracy, synthetic PanDA history of {n} tasks",
         _per_target(quality, "dnn", "accuracy")),
        ("the Bayes limit there (the best any model of the submission-time features can do)",
         _per_target(quality, "bayes", "accuracy")),
        ("DNN under-allocation of the risk policy at α = 0.05 (bound: 0.05)",
         _per_target(quality, "dnn", "risk_under_allocation_rate")),
    ]  # fmt: skip


def _real_trace_rows(doc: dict[str, Any]) -> list[Row]:
    gains = [f"{t} {fmt(at(doc, ('results', 'PanDA-jobs', t, 'goal', 'macro_f1_gain')))}"
             for t in TARGETS if at(doc, ("results", "PanDA-jobs", t, "goal")) is not None]  # fmt: skip
    if not gains:
        return []
    return [("real ATLAS PanDA job records, walk-forward: served macro-F1 minus the user's "
             "request's", ", ".join(gains))]  # fmt: skip


def _serve_rows(doc: dict[str, Any]) -> list[Row]:
    def v(goal: str, key: str = "value") -> str:
        return fmt(at(doc, ("verdict", goal, key)))

    loop = fmt(at(doc, ("machine", "reference_loop_s", "before")))
    cores = fmt(at(doc, ("machine", "cpu_cores")))
    return [(f"HTTP service, {fmt(doc.get('workers'))} workers on {cores} cores (reference loop "
             f"{loop} s): task by id at 8 connections",
             f"p99 {v('db_c8_p99_ms')} ms, {v('db_c8_requests_per_s')} requests/s (goal ≤ "
             f"{v('db_c8_p99_ms', 'goal')} ms, ≥ {v('db_c8_requests_per_s', 'goal')})")]  # fmt: skip


def _listen_rows(doc: dict[str, Any]) -> list[Row]:
    return [
        (
            f"PanDA listener and JEDI plugin end to end, {fmt(doc.get('tasks'))} tasks at "
            f"{fmt(doc.get('rate_achieved_per_s'))}/s",
            f"{fmt(doc.get('lost'))} lost, {fmt(doc.get('duplicated'))} duplicated; published → "
            f"row updated p50 {fmt(at(doc, ('latency_s', 'p50')))} s, "
            f"p99 {fmt(at(doc, ('latency_s', 'p99')))} s",
        )
    ]


def _replay_rows(doc: dict[str, Any]) -> list[Row]:
    base = strategies_at(doc)
    if base is None:
        return []
    names = list(at(doc, base))

    def each(*metric: str) -> str:
        return ", ".join(f"{n} {fmt(at(doc, (*base, n, *metric)))}" for n in names)

    first = (
        ("time_to_first_job_s", "p50")
        if at(doc, (*base, names[0], "time_to_first_job_s"))
        else ("time_to_first_job_p50_s",)
    )
    return [("scheduling on a clock, the same tasks: time to the first production job, P50 (s)",
             each(*first)),
            ("… and wasted core-hours (killed attempts)", each("wasted_core_hours"))]  # fmt: skip


def _sizing_rows(doc: dict[str, Any]) -> list[Row]:
    cells = at(doc, ("over_cells",)) or {}
    median = cells.get("median_ratio") or {}
    if not median:
        return []
    seeds = ", ".join(str(s) for s in doc.get("seeds", []))
    share = cells.get("wastage_met_share")
    rows = [(f"online sizing, Sizey's six nf-core traces (peers' protocol), seeds {seeds}: "
             "scoutless's memory wastage ÷ the best of every baseline (Witt, Witt-LR, Witt's "
             "LWR online, Tovar, JEDI, VPA) per workflow and seed, median over "
             f"{fmt(cells.get('count'))} cells [95 % bootstrap interval]",
             f"{fmt(median.get('median'))} [{fmt(median.get('low'))}, {fmt(median.get('high'))}];"
             f" at or below the best on {'—' if share is None else f'{100 * share:.0f}'} % of "
             "the cells")]  # fmt: skip
    live = cells.get("live") or {}
    if live.get("median_ratio"):
        m = live["median_ratio"]
        rows.append((f"… under the live protocol (submission order, outcomes at completion), "
                     f"{fmt(live.get('cells'))} cells",
                     f"{fmt(m.get('median'))} [{fmt(m.get('low'))}, {fmt(m.get('high'))}]"))  # fmt: skip
    return rows


ROWS: dict[str, Callable[[dict[str, Any]], list[Row]]] = {
    "train": _train_rows,
    "real_traces": _real_trace_rows,
    "replay": _replay_rows,
    "sizing": _sizing_rows,
    "serve": _serve_rows,
    "listen": _listen_rows,
}


def headline(folder: Path, link: Callable[[str], str]) -> str:
    """The table: one row per figure, each linked to where it comes from (``link(name)``)."""
    rows = []
    for name, make in ROWS.items():
        doc = load_result(folder, name)
        if doc is None:
            continue
        date = fmt(at(doc, ("machine", "date")))
        rows += [(what, figure, f"[{name}]({link(name)}), {date}") for what, figure in make(doc)]
    return table(("what", "figure", "from"), rows)


def readme_link(name: str) -> str:
    return f"results/{name}.json"


def rewrite_readme(readme: Path, folder: Path) -> bool:
    """Put the current table between the README's markers; True if it changed."""
    text = readme.read_text()
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{readme}: no {START} … {END} markers")
    block = f"{START}\n{headline(folder, readme_link)}{END}"
    new = pattern.sub(lambda _: block, text)
    readme.write_text(new)
    return new != text


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[1]
    changed = rewrite_readme(root / "README.md", root / "results")
    print("README.md headline " + ("updated" if changed else "unchanged"), file=sys.stderr)
