"""The report's figures, drawn from a metrics dict and returned as base64 PNG.

Figures are built with ``matplotlib.figure.Figure`` (the Agg renderer, no pyplot), so
drawing needs no display and leaves no global state behind. All use the constrained layout,
which keeps outside legends in the picture at half the cost of ``bbox_inches="tight"``.
"""

from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np
from matplotlib.figure import Figure

DPI = 90
_MODEL_COLOURS = {
    "majority": "#bbbbbb",
    "history": "#8c8c8c",
    "scouts": "#d62728",
    "bayes": "#2ca02c",
}


def to_base64_png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)  # constrained layout; "tight" bbox costs 2x
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _colour(name: str, index: int) -> str:
    return _MODEL_COLOURS.get(name, f"C{index % 10}")


def _names(entry: dict[str, Any]) -> list[str]:
    """Bundle models first, then baselines, as stored."""
    models = entry["models"]
    return sorted(models, key=lambda n: (models[n].get("kind") != "model", list(models).index(n)))


def model_bars(entry: dict[str, Any], title: str) -> str:
    """Accuracy and macro-F1 of every model and baseline on one target."""
    names = _names(entry)
    acc = [entry["models"][n]["accuracy"] or 0.0 for n in names]
    f1 = [entry["models"][n]["macro_f1"] or 0.0 for n in names]
    fig = Figure(figsize=(2.5 + 0.9 * len(names), 3.2), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(names))
    ax.bar(x - 0.2, acc, 0.4, label="accuracy", color="#1f77b4")
    ax.bar(x + 0.2, f1, 0.4, label="macro-F1", color="#ff7f0e")
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return to_base64_png(fig)


def confusion_matrices(entry: dict[str, Any], title: str) -> str:
    """Row-normalised confusion matrix per model (rows: true class), counts annotated."""
    names = _names(entry)
    labels = entry["classes"]
    n_cols = min(3, len(names))
    n_rows = -(-len(names) // n_cols)
    size = 1.0 + 0.55 * len(labels)
    fig = Figure(figsize=(n_cols * size + 0.5, n_rows * size + 0.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(n_rows, n_cols, squeeze=False)).ravel()
    for ax, name in zip(axes, names, strict=False):
        counts = np.asarray(entry["models"][name]["confusion"], dtype=float)
        share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
        ax.imshow(share, vmin=0, vmax=1, cmap="Blues")
        for (i, j), c in np.ndenumerate(counts):
            ax.text(j, i, f"{int(c)}", ha="center", va="center", fontsize=7,
                    color="white" if share[i, j] > 0.6 else "black")  # fmt: skip
        ticks = np.arange(len(labels))
        ax.set_xticks(ticks, labels, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(ticks, labels, fontsize=7)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("predicted", fontsize=7)
        ax.set_ylabel("true", fontsize=7)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    fig.suptitle(title)
    return to_base64_png(fig)


Series = list[tuple[str, str, list[float]]]  # (model name, legend label, one value per class)


def _class_panels(
    panels: dict[str, Series], classes: list[str], title: str, *, unit_range: bool
) -> str:
    """Side-by-side panels of per-class bars, one bar per model; legend on the right."""
    fig = Figure(figsize=(9, 3.2), layout="constrained")
    axes = fig.subplots(1, len(panels), sharey=True)
    x = np.arange(len(classes))
    for ax, (panel, series) in zip(axes, panels.items(), strict=True):
        width = 0.8 / max(len(series), 1)
        for i, (name, label, values) in enumerate(series):
            ax.bar(x - 0.4 + width * (i + 0.5), values, width, label=label, color=_colour(name, i))
        if unit_range:
            ax.set_ylim(0, 1)
        else:
            ax.axhline(0.0, color="#2ca02c", linewidth=1)
        ax.set_xticks(x, classes, fontsize=8)
        ax.set_title(panel)
        ax.grid(axis="y", alpha=0.3)
    axes[-1].legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(title)
    return to_base64_png(fig)


def per_class_bars(entry: dict[str, Any], title: str) -> str:
    """Precision and recall per class, one bar per model."""
    panels = {
        key: [(n, n, [c[key] for c in entry["models"][n]["per_class"]]) for n in _names(entry)]
        for key in ("precision", "recall")
    }
    return _class_panels(panels, entry["classes"], title, unit_range=True)


def reliability_diagram(entry: dict[str, Any], title: str) -> str:
    """Accuracy vs confidence per bundle model, with its ECE; the diagonal is perfect."""
    fig = Figure(figsize=(4.2, 4.0), layout="constrained")
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfect")
    for i, (name, cal) in enumerate(entry.get("calibration", {}).items()):
        curve = cal["reliability"]
        ax.plot(curve["confidence"], curve["accuracy"], marker="o", ms=3, color=_colour(name, i),
                label=f"{name} (ECE {cal['ece']:.3f})")  # fmt: skip
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("confidence (top class)")
    ax.set_ylabel("accuracy")
    ax.set_title(title)
    ax.legend(fontsize="small", loc="upper left")
    ax.grid(alpha=0.3)
    return to_base64_png(fig)


def tradeoff_curves(entry: dict[str, Any], alpha: float, title: str) -> str:
    """Under-allocation and accuracy vs the risk policy's α and the safe policy's τ."""
    curves = entry["tradeoff"]
    fig = Figure(figsize=(9, 3.2), layout="constrained")
    ax_alpha, ax_tau = fig.subplots(1, 2, sharey=True)
    a = curves["alpha"]
    ax_alpha.plot(a["values"], a["under_allocation"], marker="o", label="under-allocation")
    ax_alpha.plot(a["values"], a["accuracy"], marker="s", label="accuracy")
    ax_alpha.plot(a["values"], a["values"], ls="--", color="grey", lw=1, label="promise: ≤ α")
    ax_alpha.axvline(alpha, color="black", lw=0.8, ls=":")
    ax_alpha.set_xlabel("risk policy α")
    ax_alpha.set_title("risk policy")
    t = curves["tau"]
    ax_tau.plot(t["values"], t["under_allocation"], marker="o", label="under-allocation")
    ax_tau.plot(t["values"], t["accuracy"], marker="s", label="accuracy")
    ax_tau.set_xlabel("safe policy τ")
    ax_tau.set_title("safe policy")
    for ax in (ax_alpha, ax_tau):
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(f"{title} ({curves.get('model', '')})")
    return to_base64_png(fig)


def pipeline_bars(pipeline: dict[str, Any]) -> str:
    """Exact match and at-least-k per model over all targets, as a base64 PNG."""
    return to_base64_png(pipeline_figure(pipeline))


def pipeline_figure(pipeline: dict[str, Any]) -> Figure:
    """Exact match and at-least-k per model over all targets: the shares of test tasks."""
    names = sorted(pipeline, key=lambda n: -(pipeline[n]["exact_match"] or 0.0))
    ks = sorted({k for p in pipeline.values() for k in p["at_least"]}, key=int)
    series = [("exact match", [pipeline[n]["exact_match"] or 0.0 for n in names])]
    series += [
        (f"≥{k} right", [pipeline[n]["at_least"].get(k) or 0.0 for n in names]) for k in ks[:-1]
    ]
    fig = Figure(figsize=(3.0 + 1.0 * len(names), 3.2), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(names))
    width = 0.8 / len(series)
    for i, (label, values) in enumerate(series):
        ax.bar(x - 0.4 + width * (i + 0.5), values, width, label=label)
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of test tasks")
    ax.set_title("all targets of a task")
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3)
    return fig


def bayes_distance_bars(distance: dict[str, Any], classes: list[str], title: str) -> str:
    """Per class, each model's recall and F1 minus the Bayes limit's (0 = at the limit)."""

    def label(name: str) -> str:
        ratio = distance[name]["accuracy_ratio"]
        return name if ratio is None else f"{name} (acc {ratio:.3f}× Bayes)"

    panels = {
        key.replace("_gap", " − Bayes"): [
            (n, label(n), [c[key] or 0.0 for c in distance[n]["per_class"]]) for n in distance
        ]
        for key in ("recall_gap", "f1_gap")
    }
    return _class_panels(panels, classes, title, unit_range=False)
