"""The replay section's figures (base64 PNG, like the rest of the report)."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from scoutless.evaluation.plots import to_base64_png

STRATEGY_COLOURS = {
    "scouts": "#d62728", "predicted": "#1f77b4", "hybrid": "#2ca02c", "selective": "#9467bd",
    "bayes": "#7f7f7f", "oracle": "#000000", "request": "#d62728",
}  # fmt: skip
#: replay.json's per-task CDFs: (key, title, unit divisor, axis label)
CDF_PANELS = (
    ("time_to_first_job_s", "submission → first production job", 3600.0, "hours (log)"),
    ("task_completion_s", "submission → task completion", 3600.0, "hours (log)"),
    ("memory_slack_gb_hours", "memory slack per task", 1.0, "GB·hours (log)"),
)


def cdfs(document: dict[str, Any]) -> str:
    """CDFs of time to the first production job, task completion and memory slack, per
    strategy (a panel whose CDF no strategy has is left out)."""
    strategies = document["strategies"]
    panels = [p for p in CDF_PANELS
              if any(e.get("cdf", {}).get(p[0]) for e in strategies.values())]  # fmt: skip
    fig = Figure(figsize=(5 * max(len(panels), 1), 3.4), layout="constrained")
    for k, (key, title, unit, label) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), k + 1)
        for name, entry in strategies.items():
            points = np.asarray(entry.get("cdf", {}).get(key, []), dtype=float) / unit
            if points.size:
                share = np.linspace(0, 1, points.size)
                ax.step(np.maximum(points, 1e-3), share, where="post", label=name,
                        color=STRATEGY_COLOURS.get(name))  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("share of tasks")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return to_base64_png(fig)


def waste_and_kills(document: dict[str, Any], target: str = "memory") -> str:
    """Wasted core-hours and kills per strategy, overall and per true class of ``target``."""
    strategies = document["strategies"]
    names = list(strategies)
    classes = sorted(
        {c for entry in strategies.values() for c in entry.get("by_class", {}).get(target, {})}
    )
    groups = ["all", *classes]
    fig = Figure(figsize=(10, 3.4), layout="constrained")
    panels = (("wasted_core_hours", "wasted core-hours"), ("kills", "memory + walltime kills"))
    x = np.arange(len(groups))
    width = 0.8 / max(len(names), 1)
    for k, (key, title) in enumerate(panels):
        ax = fig.add_subplot(1, 2, k + 1)
        for i, name in enumerate(names):
            entry = strategies[name]
            rows = [entry, *(entry.get("by_class", {}).get(target, {}).get(c, {}) for c in classes)]
            values = [_metric(row, key) for row in rows]
            ax.bar(x + (i - (len(names) - 1) / 2) * width, values, width, label=name,
                   color=STRATEGY_COLOURS.get(name))  # fmt: skip
        ax.set_xticks(x, groups, fontsize=8)
        ax.set_xlabel(f"true {target} class")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    return to_base64_png(fig)


def _metric(row: dict[str, Any], key: str) -> float:
    if not row:
        return 0.0
    if key == "kills":
        return float(row.get("memory_kills", 0) + row.get("walltime_kills", 0))
    return float(row.get(key) or 0.0)


def replay_figures(document: dict[str, Any]) -> dict[str, str]:
    return {"cdfs": cdfs(document), "waste": waste_and_kills(document)}
