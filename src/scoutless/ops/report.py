"""The monitor's HTML page: quality and drift over time, one self-contained file.

Plots are PNGs drawn with matplotlib's Agg backend and embedded as base64, so the page can
be mailed or archived without its images getting lost.
"""

from __future__ import annotations

import base64
import io
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from jinja2 import Environment, select_autoescape

from scoutless.config import RolloutSettings
from scoutless.ops.figure_labels import MONITOR_LABELS, figure_label
from scoutless.ops.guard_rail import judge
from scoutless.ops.monitoring import MonitorSnapshot
from scoutless.targets.bins import TargetBins

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;
text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
img{max-width:100%}.alert{color:#a00}tr.excludes-zero td{font-weight:bold}
.verdict{font-weight:bold}td.t{text-align:left}
</style></head><body>
<h1>{{ title }}</h1>
<p>Generated {{ generated }} UTC · window {{ every }} · {{ n_predictions }} logged predictions,
{{ n_joined }} with actuals.</p>
<h2>Alerts</h2>
{% if alerts %}<table><tr><th>window</th><th>rule</th><th>message</th></tr>
{% for a in alerts %}<tr class="alert"><td>{{ a.window_start }}</td><td>{{ a.rule }}</td>
<td style="text-align:left">{{ a.message }}</td></tr>{% endfor %}</table>
{% else %}<p>None.</p>{% endif %}
{% for section in sections %}<h2>{{ section.title }}</h2>
{% if section.image %}<img alt="{{ section.title }}" src="data:image/png;base64,{{ section.image }}">
{% endif %}{{ section.table | safe }}{% endfor %}
</body></html>
"""


def _png(fig: plt.Figure, tight: bool = True) -> str:
    """``tight``: crop to the drawing (a figure laid out ``constrained`` needs no crop)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight" if tight else None)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def _time_series(frame: pd.DataFrame, key: str, metrics: list[str], title: str) -> str | None:
    if frame.empty:
        return None
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.2), squeeze=False)
    for ax, metric in zip(axes[0], metrics, strict=True):
        for name, group in frame.groupby(key, sort=True):
            group = group.sort_values("window_start")
            ax.plot(group["window_start"], group[metric], marker="o", label=str(name))
        ax.set_title(figure_label(metric).shown)
        ax.tick_params(axis="x", rotation=30)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(title)
    return _png(fig)


def _top_features(drift: pd.DataFrame, n: int = 8) -> pd.DataFrame:
    """The features whose PSI peaked highest: a plot of all 24 would be unreadable."""
    if drift.empty:
        return drift
    top = drift.groupby("feature")["psi"].max().nlargest(n).index
    return drift[drift["feature"].isin(top)]


def _confusion_plot(confusion: dict[str, np.ndarray], bins: dict[str, TargetBins]) -> str | None:
    if not confusion:
        return None
    fig, axes = plt.subplots(1, len(confusion), figsize=(4 * len(confusion), 3.6), squeeze=False)
    for ax, (target, matrix) in zip(axes[0], confusion.items(), strict=True):
        labels = list(bins[target].labels) if target in bins else list(range(len(matrix)))
        ax.imshow(matrix, cmap="Blues")
        for (i, j), count in np.ndenumerate(matrix):
            ax.text(j, i, str(count), ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(labels)), labels, rotation=45, fontsize=7)
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.set_xlabel("predicted")
        ax.set_ylabel("actual")
        ax.set_title(target)
    return _png(fig)


def _html_table(frame: pd.DataFrame) -> str:
    """The frame as a table, its figures' columns named for people, with their direction."""
    if frame.empty:
        return "<p>No data.</p>"
    shown = {c: figure_label(c).shown for c in frame.columns if c in MONITOR_LABELS}
    return frame.rename(columns=shown).to_html(
        index=False, float_format=lambda v: f"{v:.3f}", border=0
    )


def _sections(snapshot: MonitorSnapshot, bins: dict[str, TargetBins]) -> list[dict[str, str]]:
    """The page's sections: quality, confusion, feature drift, class-prior drift."""
    perf, drift, prior = snapshot.performance, snapshot.feature_drift, snapshot.prior_drift
    return [
        {
            "title": "Prediction quality per window",
            "image": _time_series(
                perf, "target", ["accuracy", "under_rate", "over_rate"], "quality against actuals"
            ),
            "table": _html_table(perf),
        },
        {
            "title": "Confusion (all windows; rows actual, columns predicted)",
            "image": _confusion_plot(snapshot.confusion, bins),
            "table": "",
        },
        {
            "title": "Feature drift (PSI; KS for numericals), top features",
            "image": _time_series(
                _top_features(drift),
                "feature",
                ["psi", "ks_stat"],
                "feature drift against training",
            ),
            "table": _html_table(
                drift.sort_values(["window_start", "psi"], ascending=[True, False])
                if not drift.empty
                else drift
            ),
        },
        {
            "title": "Class-prior drift (PSI of class shares against training)",
            "image": _time_series(
                prior.assign(series=prior["target"] + "/" + prior["source"])
                if not prior.empty
                else prior,
                "series",
                ["psi", "tvd"],
                "class priors",
            ),
            "table": _html_table(prior),
        },
    ]


def render_report(
    snapshot: MonitorSnapshot,
    bins: dict[str, TargetBins],
    out: str | Path,
    *,
    alerts: pd.DataFrame | None = None,
    title: str = "scoutless monitoring",
    impact: tuple[Any, RolloutSettings] | None = None,
) -> Path:
    """Write the page to ``out`` and return its path (``impact``: the rollout's
    ``ImpactReport`` and the settings that judge it, whose sections follow)."""
    sections = _sections(snapshot, bins) + (impact_sections(*impact) if impact else [])
    alert_rows = [] if alerts is None or alerts.empty else alerts.to_dict("records")
    return _write_page(
        out, title=title, every=snapshot.every, n_predictions=snapshot.n_predictions,
        n_joined=snapshot.n_joined, alerts=alert_rows, sections=sections,
    )  # fmt: skip


def _write_page(out: str | Path, **fields: Any) -> Path:
    """The page from the template (``fields``: its variables), written to ``out``."""
    html = (
        Environment(autoescape=select_autoescape(default=True))
        .from_string(_TEMPLATE)
        .render(generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M"), **fields)
    )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    return out


def significant(value: Any, digits: int = 3) -> str:
    """A figure for people: ``digits`` significant digits, thousands separated, "—" when
    missing, never "-0"."""
    if value is None or not np.isfinite(value):
        return "—"
    rounded = float(f"{float(value):.{digits}g}")
    if rounded == 0:
        return "0"
    return f"{rounded:,.0f}" if abs(rounded) >= 10 ** (digits - 1) else f"{rounded:,g}"


def excludes_zero(d: Any) -> bool:
    """Whether a difference's interval lies wholly on one side of zero."""
    return bool(np.isfinite(d.lo) and np.isfinite(d.hi) and (d.lo > 0 or d.hi < 0))


#: the columns naming a figure: its name, its better direction, unit and pooling
_FIGURE_HEADERS = ["figure", "better", "unit", "over"]


def _figure_cells(figure: str) -> list[str]:
    label = figure_label(figure)
    return [label.name, label.arrow, label.unit, label.pooled]


def _rows_table(headers: list[str], rows: list[tuple[list[str], bool]]) -> str:
    """An escaped HTML table, the figure's columns left-aligned; a row flagged True is bold
    and marked ✱."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    text = len(_FIGURE_HEADERS)
    body = []
    for cells, marked in rows:
        tds = "".join(f'<td class="t">{escape(c)}</td>' if i < text else f"<td>{escape(c)}</td>"
                      for i, c in enumerate(cells))  # fmt: skip
        body.append(f'<tr class="excludes-zero"><th>✱</th>{tds}</tr>' if marked
                    else f"<tr><td></td>{tds}</tr>")  # fmt: skip
    return f"<table><tr><th></th>{head}</tr>{''.join(body)}</table>" if body else "<p>No data.</p>"


def _per_arm_table(report: Any) -> str:
    frame = report.per_arm
    if frame.empty:
        return "<p>No tasks with figures yet.</p>"
    arms = sorted(frame["arm"].dropna().unique())
    rows = []
    for figure, group in frame.groupby("figure", sort=False):
        by_arm = group.set_index("arm")
        cells = [significant(by_arm.at[a, "value"]) if a in by_arm.index else "—" for a in arms]
        if any(c != "—" for c in cells):
            rows.append(([*_figure_cells(str(figure)), *cells], False))
    return _rows_table([*_FIGURE_HEADERS, *arms], rows)


def _differences_table(report: Any) -> str:
    diffs = [d for d in report.differences if np.isfinite(d.value)]
    if not diffs:
        return "<p>No canary and control tasks to compare yet.</p>"
    rows = [
        ([*_figure_cells(d.figure), significant(d.value),
          f"[{significant(d.lo)}, {significant(d.hi)}]", f"{d.n_arm:,} / {d.n_baseline:,}"],
         excludes_zero(d))
        for d in diffs
    ]  # fmt: skip
    first = diffs[0]
    headers = [*_FIGURE_HEADERS, f"{first.arm} − {first.baseline}", "95 % interval", "tasks"]
    note = (
        f"✱ bold: the interval excludes zero. A difference in its figure's better "
        f"direction favours {first.arm}."
    )
    return _rows_table(headers, rows) + f"<p>{escape(note)}</p>"


def _figure_plot(wide: pd.DataFrame, figure: str) -> str | None:
    """One figure per arm over the windows; its title is the page's heading, not the PNG's."""
    if wide.empty or figure not in wide.columns or wide[figure].isna().all():
        return None
    fig, ax = plt.subplots(figsize=(7, 2.6), layout="constrained")
    for arm, group in wide.groupby("arm", sort=True):
        group = group.sort_values("window_start")
        ax.plot(group["window_start"], group[figure], marker="o", ms=3, label=str(arm))
    ax.set_ylabel(figure_label(figure).unit, fontsize=8)
    ax.tick_params(axis="x", rotation=30, labelsize=7)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _png(fig, tight=False)


def impact_verdict(report: Any, settings: RolloutSettings) -> str:
    """One line: what the guard rail does with this report (nothing is changed here)."""
    verdict = judge(report, settings)
    action = "would move the rollout back to shadow" if verdict.tripped else "would do nothing"
    return f"guard rail {action}: {verdict.message}"


def impact_sections(report: Any, settings: RolloutSettings) -> list[dict[str, Any]]:
    """The verdict; per figure its value per arm over the windows; the per-arm table; the
    differences, the rows whose interval excludes zero marked."""
    wide = report.per_window.pivot_table(
        index=["window_start", "arm"], columns="figure", values="value"
    ).reset_index()
    sections = [{"title": "verdict", "image": None,
                 "table": f'<p class="verdict">{escape(impact_verdict(report, settings))}</p>'}]  # fmt: skip
    sections.append({"title": "impact per arm (all windows)", "image": None,
                     "table": _per_arm_table(report)})  # fmt: skip
    sections.append({"title": "canary − control (bootstrap interval over tasks)", "image": None,
                     "table": _differences_table(report)})  # fmt: skip
    for figure in report.per_arm["figure"].unique():
        label = figure_label(str(figure))
        image = _figure_plot(wide, str(figure))
        if image:
            sections.append({"title": f"{label.name} per window ({label.unit}, {label.pooled};"
                                      f" {label.direction})", "image": image, "table": ""})  # fmt: skip
    return sections


def render_impact(
    report: Any, out: str | Path, *, settings: RolloutSettings, every: str = "1D",
    title: str = "scoutless rollout impact",
) -> Path:  # fmt: skip
    """The impact's own page."""
    return _write_page(
        out, title=title, every=every, n_predictions=report.n_tasks, n_joined=report.n_tasks,
        alerts=[], sections=impact_sections(report, settings),
    )  # fmt: skip
