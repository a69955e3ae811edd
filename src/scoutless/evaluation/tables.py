"""Rich tables of an evaluation's metrics dict (the same rows feed the HTML report)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

#: Comparison columns of the headline, in order (absent ones are left out).
HEADLINE_BASELINES: tuple[str, ...] = ("xgb", "scouts", "history", "bayes", "user_request", "last2")


SHORT_NAMES: dict[str, str] = {"scouts": "scout", "history": "hist", "user_request": "req"}


def fmt(value: Any, digits: int = 3) -> str:
    """A number for people: fixed digits, "–" when missing."""
    if value is None or value == "":
        return "–"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def best_model(entry: dict[str, Any]) -> str | None:
    """The bundle model with the highest accuracy on this target (None if it has none)."""
    models = {
        n: m
        for n, m in entry["models"].items()
        if m.get("kind") == "model" and m["accuracy"] is not None
    }
    return max(models, key=lambda n: models[n]["accuracy"]) if models else None


def headline_rows(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """Per target: the best model's accuracy/macro-F1, the baselines' accuracy, risk policy."""
    rows = []
    for target, entry in metrics["targets"].items():
        best = best_model(entry)
        models = entry["models"]
        risk = entry.get("policies", {}).get("risk", {})
        rows.append(
            {
                "target": target,
                "best": best,
                "accuracy": models[best]["accuracy"] if best else None,
                "macro_f1": models[best]["macro_f1"] if best else None,
                "baselines": {
                    name: models[name]["accuracy"] if name in models else None
                    for name in HEADLINE_BASELINES
                },
                "risk_under": risk.get("under_allocation_rate"),
                "risk_alpha": risk.get("alpha"),
                "risk_over_median": risk.get("over_allocation_median"),
            }
        )
    return rows


def headline_columns(metrics: dict[str, Any]) -> list[str]:
    """Baseline columns present for at least one target."""
    rows = headline_rows(metrics)
    return [n for n in HEADLINE_BASELINES if any(r["baselines"][n] is not None for r in rows)]


def headline_table(metrics: dict[str, Any]) -> Table:
    """Per target: best model accuracy/macro-F1 vs xgb and the baselines present; risk policy."""
    columns = headline_columns(metrics)
    split = metrics.get("dataset", {}).get("split", "")
    alpha = metrics.get("settings", {}).get("alpha")
    title = f"test accuracy ({split} split); risk policy at α={fmt(alpha, 2)}"
    caption = "mF1: macro-F1 · under: under-allocation rate · over×: median allocated/true"
    table = Table(
        title=title, caption=caption, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
    )
    # names never truncate; numbers shrink to their 5 characters first (fits 80 columns)
    table.add_column("target", style="bold", no_wrap=True, min_width=8)
    table.add_column("best", no_wrap=True, min_width=10)
    number = {"justify": "right", "min_width": 5, "max_width": 6, "no_wrap": True}
    table.add_column("acc", style="green", **number)
    table.add_column("mF1", **number)
    for name in columns:
        table.add_column(SHORT_NAMES.get(name, name), **number)
    table.add_column("under", **number)
    table.add_column("over×", **number)
    for row in headline_rows(metrics):
        table.add_row(
            row["target"],
            row["best"] or "–",
            fmt(row["accuracy"]),
            fmt(row["macro_f1"]),
            *(fmt(row["baselines"][n]) for n in columns),
            fmt(row["risk_under"]),
            fmt(row["risk_over_median"], 2),
        )
    return table


def models_table(metrics: dict[str, Any], target: str) -> Table:
    """Every model and baseline on one target."""
    entry = metrics["targets"][target]
    table = Table(title=f"{target} ({entry['unit']}): {len(entry['classes'])} classes")
    for col in ("model", "kind", "accuracy", "macro-F1", "weighted-F1", "ECE", "under-alloc",
                "over-alloc median"):  # fmt: skip
        table.add_column(col, justify="left" if col in ("model", "kind") else "right")
    ranked = sorted(entry["models"].items(), key=lambda kv: -(kv[1]["accuracy"] or 0.0))
    for name, m in ranked:
        table.add_row(
            name + (" *" if name == entry.get("champion") else ""),
            m.get("kind", ""),
            fmt(m["accuracy"]),
            fmt(m["macro_f1"]),
            fmt(m["weighted_f1"]),
            fmt(m.get("ece")),
            fmt(m.get("under_allocation_rate")),
            fmt(m.get("over_allocation_median"), 2),
        )
    return table


def policies_table(metrics: dict[str, Any]) -> Table:
    """Decision policies of each target's champion."""
    table = Table(title="decision policies (champion model)")
    for col in ("target", "policy", "model", "accuracy", "under-alloc", "over-alloc median",
                "over-alloc P90", "α", "τ"):  # fmt: skip
        table.add_column(col, justify="left" if col in ("target", "policy", "model") else "right")
    for target, entry in metrics["targets"].items():
        for name, p in entry.get("policies", {}).items():
            table.add_row(
                target, name, p["model"], fmt(p["accuracy"]), fmt(p["under_allocation_rate"]),
                fmt(p["over_allocation_median"], 2), fmt(p["over_allocation_p90"], 2),
                fmt(p["alpha"], 2), fmt(p["tau"], 2),
            )  # fmt: skip
    return table


def pipeline_table(metrics: dict[str, Any]) -> Table:
    """All targets at once: exact match, at least k right, mean accuracy."""
    pipeline = metrics["pipeline"]
    ks = sorted({k for p in pipeline.values() for k in p["at_least"]}, key=int)
    table = Table(title="pipeline: all targets of a task")
    table.add_column("model")
    table.add_column("exact match", justify="right", style="green")
    for k in ks:
        table.add_column(f"≥{k} right", justify="right")
    table.add_column("mean accuracy", justify="right")
    ranked = sorted(pipeline.items(), key=lambda kv: -(kv[1]["exact_match"] or 0.0))
    for name, p in ranked:
        table.add_row(
            name,
            fmt(p["exact_match"]),
            *(fmt(p["at_least"].get(k)) for k in ks),
            fmt(p["mean_accuracy"]),
        )
    return table


def walk_forward_tables(result: dict[str, Any]) -> list[Table]:
    """One table per target: macro-F1 / accuracy per period and pooled, per predictor."""
    views = []
    for target, overall in result["overall"].items():
        names = list(overall)
        view = Table(title=f"{target}: walk-forward every {result['period']} (mF1 / acc)",
                     box=box.SIMPLE_HEAD)  # fmt: skip
        view.add_column("period")
        view.add_column("rows", justify="right")
        for name in names:
            view.add_column(name, justify="right")
        for entry in result["periods"]:
            scores = entry.get(target)
            if not scores:
                continue
            n = next(iter(scores.values()))["n"]
            cells = [_pair(scores.get(name)) for name in names]
            view.add_row(entry["period"], str(n), *cells)
        n_all = next(iter(overall.values()))["n"]
        view.add_row("[bold]overall", str(n_all), *[_pair(overall[name]) for name in names])
        views.append(view)
    return views


def _pair(scores: dict[str, Any] | None) -> str:
    return "–" if scores is None else f"{fmt(scores['macro_f1'])} / {fmt(scores['accuracy'])}"


#: the allocation table's columns (terminal and report.html)
ALLOCATION_COLUMNS = ("target", "value under", "value ×", "risk-class ×", "bayes ×",
                      "same-under ×", "÷ bayes")  # fmt: skip
ALLOCATION_CAPTION = (
    "under: share of tasks under-allocated · ×: median allocated ÷ needed · bayes: the true "
    "quantile (same-under: at the level under-allocating exactly α)"
)


def allocation_rows(metrics: dict[str, Any]) -> list[list[str]]:
    """Per target with value models: the cells of :data:`ALLOCATION_COLUMNS`."""
    rows = []
    for target, entry in metrics["targets"].items():
        a = entry.get("allocation")
        if not a:
            continue
        rows.append([
            target, fmt(a["value"]["under_allocation"]), fmt(a["value"]["median_ratio"], 2),
            fmt(a["risk_class"]["median_ratio"], 2),
            fmt(a.get("bayes_value", {}).get("median_ratio"), 2),
            fmt(a.get("bayes_value_same_under", {}).get("median_ratio"), 2),
            fmt(a.get("ratio_to_bayes"), 3),
        ])  # fmt: skip
    return rows


def allocation_alpha_and_rows(metrics: dict[str, Any]) -> tuple[float | None, int]:
    """The α the allocations were read at and the test tasks they were measured on."""
    entry = next((e["allocation"] for e in metrics["targets"].values() if e.get("allocation")), {})
    return entry.get("alpha"), int(entry.get("rows") or 0)


def under_allocation_noise(alpha: float, n: int) -> float:
    """The highest realised under-allocation rate that is within sampling noise of a bound
    ``alpha`` over ``n`` test tasks: alpha + 2·sqrt(alpha(1 − alpha)/n)."""
    return alpha + 2.0 * (alpha * (1 - alpha) / max(n, 1)) ** 0.5


def allocation_table(metrics: dict[str, Any]) -> Table | None:
    """Per target: the value allocation's under-allocation and median allocated ÷ needed,
    against the risk policy's class value and the Bayes-optimal value quantile."""
    rows = allocation_rows(metrics)
    if not rows:
        return None
    alpha, _ = allocation_alpha_and_rows(metrics)
    table = Table(
        title=f"allocated ÷ needed on the test tasks at α={fmt(alpha, 2)}",
        caption=ALLOCATION_CAPTION, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
    )  # fmt: skip
    for col in ALLOCATION_COLUMNS:
        table.add_column(col, justify="left" if col == "target" else "right")
    for row in rows:
        table.add_row(*row)
    return table
