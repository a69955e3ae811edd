"""The self-contained HTML report of an evaluation: tables + figures embedded as base64 PNG.

It is rendered from the metrics dict alone, so a report can be redrawn from a saved
metrics.json (``write_report(json.loads(path.read_text()), out)``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import jinja2

from scoutless.atomic import atomic_write_text
from scoutless.evaluation import plots
from scoutless.evaluation.bayes_gap import bayes_distance
from scoutless.evaluation.conclusion import conclusion
from scoutless.evaluation.tables import (
    ALLOCATION_CAPTION,
    ALLOCATION_COLUMNS,
    allocation_alpha_and_rows,
    allocation_rows,
    best_model,
    fmt,
    headline_columns,
    headline_rows,
    under_allocation_noise,
)

TEMPLATE = "report.html"


def _template() -> jinja2.Template:
    source = resources.files("scoutless.evaluation").joinpath("templates", TEMPLATE).read_text()
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["fmt"] = fmt
    return env.from_string(source)


def target_figures(target: str, entry: dict[str, Any], alpha: float) -> dict[str, str]:
    """The base64 PNG figures of one target's section, by name."""
    figures = {
        "models": plots.model_bars(entry, f"{target}: models vs baselines"),
        "confusion": plots.confusion_matrices(entry, f"{target}: confusion matrices"),
        "per_class": plots.per_class_bars(entry, f"{target}: per-class precision and recall"),
    }
    if entry.get("calibration"):
        figures["reliability"] = plots.reliability_diagram(entry, f"{target}: reliability")
    distance = bayes_distance(entry)
    if distance:
        figures["bayes_distance"] = plots.bayes_distance_bars(
            distance, entry["classes"], f"{target}: distance to the Bayes limit per class"
        )
    if entry.get("tradeoff"):
        figures["tradeoff"] = plots.tradeoff_curves(entry, alpha, f"{target}: τ/α trade-off")
    return figures


def render_report(metrics: dict[str, Any], replay: dict[str, Any] | None = None) -> str:
    """The report as one HTML string (no external resources); ``replay``: the replay
    section's rows and figures (``scoutless.replay.report.replay_section``)."""
    alpha = metrics.get("settings", {}).get("alpha", 0.05)
    sections = [
        {
            "name": target,
            "entry": entry,
            "best": best_model(entry),
            "figures": target_figures(target, entry, alpha),
            "bayes_distance": bayes_distance(entry),
        }
        for target, entry in metrics["targets"].items()
    ]
    version = metrics.get("bundle", {}).get("version", "?")
    pipeline = metrics.get("pipeline")
    return _template().render(
        metrics=metrics,
        title=f"scoutless evaluation — bundle {version}",
        conclusion=conclusion(metrics),
        headline=headline_rows(metrics),
        headline_columns=headline_columns(metrics),
        sections=sections,
        pipeline_figure=plots.pipeline_bars(pipeline) if pipeline else None,
        replay=replay,
        allocation=_allocation(metrics),
    )


def _allocation(metrics: dict[str, Any]) -> dict[str, Any] | None:
    """The value/cost allocation table (as the terminal prints it) and what a miss of the
    bound means at this many test tasks."""
    rows = allocation_rows(metrics)
    if not rows:
        return None
    alpha, n = allocation_alpha_and_rows(metrics)
    return {"columns": ALLOCATION_COLUMNS, "rows": rows, "caption": ALLOCATION_CAPTION,
            "alpha": alpha, "n": n,
            "within": under_allocation_noise(alpha, n) if alpha else None}  # fmt: skip


def write_report(metrics: dict[str, Any], path: Path, replay: dict[str, Any] | None = None) -> Path:
    """The self-contained report.html, renamed into place once complete (an interrupted run
    keeps the previous page)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(path, render_report(metrics, replay))
