"""How each figure of the monitor's pages is shown to people: its name, unit, pooling and
better direction.

The impact figures' table is read by the guard rail (which direction is harm), the HTML
pages and the terminal tables, so a figure is named and judged the same way wherever it
appears; the quality and drift figures' table names the monitor page's plots and columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class FigureLabel:
    """``name``: what a person reads; ``better``: the direction an operator wants."""

    name: str
    unit: str
    pooled: str
    better: Literal["higher", "lower"] | None = "lower"

    @property
    def direction(self) -> str:
        """The better direction in words, for a table's cell or a plot's title."""
        return f"{self.better} is better" if self.better else ""

    @property
    def arrow(self) -> str:
        """The better direction as an arrow, for narrow places."""
        return {"higher": "↑ better", "lower": "↓ better"}.get(self.better or "", "")

    @property
    def shown(self) -> str:
        """The name with its arrow, for a column's header or a plot's title."""
        return f"{self.name} ({self.arrow})" if self.arrow else self.name


#: per figure, how it is shown (each figure is a ratio of sums over tasks: a per-task
#: figure is then their mean, not the median the replay's P50 shows). The ``*_vs_scouts``
#: figures are lower-better as the guard rail reads them: less asked than the scouts
#: settled on, the kills read beside them.
FIGURE_LABELS: dict[str, FigureLabel] = {
    "first_prod_job_h": FigureLabel("time to the first production job", "h", "mean over tasks"),
    "completion_h": FigureLabel("task completion time", "h", "mean over completed tasks"),
    "first_attempt_success": FigureLabel(
        "first-attempt success", "share", "pooled over first attempts", "higher"
    ),
    "memory_kills": FigureLabel("memory kills per job", "per job", "pooled over jobs"),
    "walltime_kills": FigureLabel("walltime kills per job", "per job", "pooled over jobs"),
    "retries_per_job": FigureLabel("retries per job", "per job", "pooled over jobs"),
    "wasted_core_hours": FigureLabel(
        "core-hours lost to failed attempts", "core·h per task", "mean over tasks"
    ),
    "memory_slack_gb_hours": FigureLabel("unused memory", "GB·h per task", "mean over tasks"),
    "memory_slack_rel": FigureLabel(
        "unused share of the memory limit", "share of the limit", "weighted by wall time"
    ),
    "walltime_slack_core_hours": FigureLabel(
        "unused walltime", "core·h per task", "mean over tasks"
    ),
    "walltime_slack_rel": FigureLabel(
        "unused share of the walltime limit", "share of the limit", "weighted by wall time"
    ),
    "memory_vs_scouts": FigureLabel(
        "memory asked against the scouts'", "× the scouts'", "ratio of totals"
    ),
    "cputime_vs_scouts": FigureLabel(
        "cpu time asked against the scouts'", "× the scouts'", "ratio of totals"
    ),
    "walltime_vs_scouts": FigureLabel(
        "walltime asked against the scouts'", "× the scouts'", "ratio of totals"
    ),
}


#: the monitor's quality (predicted class against the actual one, per window) and drift
#: (against training) figures
MONITOR_LABELS: dict[str, FigureLabel] = {
    "accuracy": FigureLabel("accuracy", "share", "per window", "higher"),
    "macro_f1": FigureLabel("macro-F1", "score", "per window", "higher"),
    "under_rate": FigureLabel("class below the actual", "share", "per window"),
    "over_rate": FigureLabel("class above the actual", "share", "per window"),
    "psi": FigureLabel("population stability index", "PSI", "per window"),
    "ks_stat": FigureLabel("Kolmogorov-Smirnov statistic", "KS", "per window"),
    "tvd": FigureLabel("total variation distance", "TVD", "per window"),
}


def figure_label(figure: str) -> FigureLabel:
    """The figure's label; a figure in neither table keeps its own name, with no direction."""
    known = FIGURE_LABELS.get(figure) or MONITOR_LABELS.get(figure)
    return known or FigureLabel(figure.replace("_", " "), "", "", None)
