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
    def v(goal: str) -> str:
        return fmt(at(doc, ("verdict", goal, "value")))

    loop = fmt(at(doc, ("machine", "reference_loop_s", "before")))
    return [(f"HTTP service, {fmt(doc.get('workers'))} workers on {fmt(at(doc, ('machine', 'cpu_cores')))} "
             f"cores (reference loop {loop} s): task by id at 8 connections",
             f"p99 {v('db_c8_p99_ms')} ms, {v('db_c8_requests_per_s')} requests/s")]  # fmt: skip


ROWS: dict[str, Callable[[dict[str, Any]], list[Row]]] = {
    "train": _train_rows,
    "real_traces": _real_trace_rows,
    "serve": _serve_rows,
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
