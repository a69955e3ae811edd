"""Evaluate a model bundle on a training table's test rows: metrics.json + report.html.

Every model in the bundle is scored per target next to the baselines (majority, history
lookup, and the table's column baselines: scouts, Bayes limit, user request, last2 …); the
champion's probabilities also go through the decision policies (argmax, safe, risk fitted
on the bundle's calibration set) and the α/τ trade-off curves. Rows whose class is missing
(-1) for a target are left out of that target and of the pipeline figures.

metrics.json keeps the layout of :func:`evaluate_bundle`'s docstring; open bin edges are
written as the string ``"inf"`` and figures without rows as ``null``
(see :mod:`scoutless.evaluation.metrics`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from scoutless.atomic import atomic_write_text
from scoutless.evaluation.allocations import allocation_figures
from scoutless.evaluation.baselines import (
    HistoryLookup,
    column_baselines,
    column_predictions,
    history_keys,
    majority_class,
)
from scoutless.evaluation.bayes_gap import bayes_distance
from scoutless.evaluation.calibration import expected_calibration_error, reliability_curve
from scoutless.evaluation.metrics import (
    classification_metrics,
    pipeline_metrics,
)
from scoutless.evaluation.policies_eval import (
    allocated_values,
    allocation_metrics,
    evaluate_policies,
    tradeoff_curves,
)
from scoutless.evaluation.report import write_report
from scoutless.features.spec import FeatureSpec
from scoutless.history.table import TrainingTable
from scoutless.jsonsafe import json_edges, jsonable
from scoutless.models.predictor import PredictorLike
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import TARGETS, class_col, value_col

METRICS_FILE = "metrics.json"
REPORT_FILE = "report.html"
CHAMPION = "champion"


class EvaluationError(ValueError):
    """A bundle and a table that cannot be evaluated together (what and where)."""


def _check_compatible(predictor: PredictorLike, table: TrainingTable) -> list[str]:
    """Targets both know, after checking their bins agree and the features are present."""
    targets = [t for t in predictor.targets if t in table.bins]
    if not targets:
        raise EvaluationError(
            f"bundle targets {list(predictor.targets)} and table targets {table.targets} "
            "have nothing in common"
        )
    for t in targets:
        ours, theirs = table.bins[t].edges, predictor.bins[t].edges
        if not np.array_equal(np.asarray(ours, float), np.asarray(theirs, float)):
            raise EvaluationError(
                f"{t}: the table's bin edges {list(ours)} differ from the bundle's "
                f"{list(theirs)}; rebuild the table with the bundle's bins"
            )
    missing = [f.name for f in predictor.feature_specs if f.name not in table.frame.columns]
    if missing:
        raise EvaluationError(f"table (source {table.source!r}) lacks bundle features {missing}")
    return targets


def _model_entry(
    pred: np.ndarray, y: np.ndarray, values: np.ndarray, bins: TargetBins
) -> dict[str, Any]:
    allocation = allocation_metrics(pred, y, values, bins)
    allocation.pop("accuracy")
    return classification_metrics(y, pred, bins.labels) | allocation


def _classes(frame: pd.DataFrame, target: str) -> np.ndarray:
    """The target's class column as int64, missing (NaN) read as -1."""
    column = pd.to_numeric(frame[class_col(target)], errors="coerce")
    return column.fillna(-1).to_numpy(dtype=np.int64)


class _TargetRun:
    """One target's figures; ``correct`` keeps per-row hits for the pipeline metrics."""

    def __init__(self, target: str, bins: TargetBins, train: pd.DataFrame, test: pd.DataFrame):
        self.target, self.bins = target, bins
        y_all = _classes(test, target)
        self.valid = (y_all >= 0) & (y_all < bins.n_classes)
        self.test = test[self.valid]
        self.y = y_all[self.valid]
        self.values = self.test[value_col(target)].to_numpy(dtype=float)
        self.train = train
        self.y_train = _classes(train, target)
        self.models: dict[str, dict[str, Any]] = {}
        self.calibration: dict[str, dict[str, Any]] = {}
        self.correct: dict[str, np.ndarray] = {}
        self.probas: dict[str, np.ndarray] = {}

    def add(self, name: str, pred: np.ndarray, **extra: Any) -> None:
        self.models[name] = _model_entry(pred, self.y, self.values, self.bins) | extra
        self.correct[name] = pred == self.y

    def add_model(self, name: str, proba: np.ndarray) -> None:
        proba = np.asarray(proba, dtype=float)[self.valid]
        if proba.shape != (len(self.y), self.bins.n_classes):
            raise EvaluationError(
                f"{self.target}/{name}: predict_proba gave shape {proba.shape}, expected "
                f"({len(self.y)}, {self.bins.n_classes})"
            )
        self.probas[name] = proba
        self.add(name, proba.argmax(axis=1), kind="model")
        if len(self.y):
            self.calibration[name] = {
                "ece": expected_calibration_error(proba, self.y),
                "reliability": reliability_curve(proba, self.y),
            }
            self.models[name]["ece"] = self.calibration[name]["ece"]

    def add_baselines(self, features: list[FeatureSpec]) -> None:
        k = self.bins.n_classes
        majority = majority_class(self.y_train, k)
        self.add("majority", np.full(len(self.y), majority, dtype=np.int64), kind="baseline")
        lookup = HistoryLookup(history_keys(features), k).fit(self.train, self.y_train)
        self.add(
            "history",
            lookup.predict(self.test),
            kind="baseline",
            keys=[list(level) for level in lookup.levels],
        )
        for baseline in column_baselines(self.test, self.target):
            pred, coverage = column_predictions(self.test, baseline.column, k, majority)
            extra: dict[str, Any] = {"kind": "baseline", "coverage": coverage}
            if baseline.name == "scouts" and "scout_wait_hours" in self.test.columns:
                hours = pd.to_numeric(self.test["scout_wait_hours"], errors="coerce").dropna()
                extra["wait_hours_median"] = float(hours.median()) if len(hours) else None
            self.add(baseline.name, pred, **extra)

    def entry(self) -> dict[str, Any]:
        return {
            "unit": self.bins.unit or (TARGETS[self.target].unit if self.target in TARGETS else ""),
            "classes": list(self.bins.labels),
            "edges": json_edges(self.bins.edges),
            "allocated": [float(v) for v in allocated_values(self.bins)],
            "rows_test": len(self.y),
            "models": self.models,
            "calibration": self.calibration,
            "bayes_distance": bayes_distance(
                {"models": self.models, "classes": list(self.bins.labels)}
            ),
        }


def _pipeline(runs: list[_TargetRun], n_rows: int, champions: dict[str, str]) -> dict[str, Any]:
    """Pipeline figures for every name scored on all targets, plus the per-target champion."""
    all_valid = np.ones(n_rows, dtype=bool)
    for run in runs:
        all_valid &= run.valid

    def on_all_valid(run: _TargetRun, hits: np.ndarray) -> np.ndarray:
        full = np.zeros(n_rows, dtype=bool)
        full[run.valid] = hits
        return full[all_valid]

    names = [n for n in runs[0].correct if all(n in r.correct for r in runs)]
    out = {
        name: pipeline_metrics({r.target: on_all_valid(r, r.correct[name]) for r in runs})
        for name in names
    }
    out[CHAMPION] = pipeline_metrics(
        {r.target: on_all_valid(r, r.correct[champions[r.target]]) for r in runs}
    )
    out[CHAMPION]["models"] = dict(champions)
    return out


@contextmanager
def _steps(enabled: bool, total: int) -> Iterator[Callable[[str], None]]:
    """A rich progress bar whose callback names the step that starts."""
    if not enabled:
        yield lambda _description: None
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, transient=True) as progress:
        task = progress.add_task("evaluating", total=total)

        def step(description: str) -> None:
            progress.update(task, description=description, advance=1)

        yield step


def _evaluate_target(
    predictor: PredictorLike,
    target: str,
    rows: tuple[pd.DataFrame, pd.DataFrame],
    features: list[FeatureSpec],
    step: Callable[[str], None],
) -> _TargetRun:
    """Every model of the bundle and the baselines on one target's test rows."""
    train, test = rows
    X_test = test[[f.name for f in predictor.feature_specs]]
    # the bundle's bins: same edges, recommendations fitted on its training rows
    run = _TargetRun(target, predictor.bins[target], train, test)
    for name in predictor.models(target):
        step(f"{target}: {name}")
        run.add_model(name, predictor.predict_proba(X_test, targets=[target], model=name)[target])
    step(f"{target}: baselines")
    run.add_baselines(features)
    step(f"{target}: policies")
    return run


def evaluate_bundle(
    predictor: PredictorLike,
    table: TrainingTable,
    out: Path,
    *,
    split: str = "random",
    alpha: float = 0.05,
    recall: float = 0.9,
    progress: bool = True,
    report: bool = True,
) -> dict[str, Any]:
    """Score ``predictor`` on the table's ``split`` test rows; write metrics.json, report.html
    (not with ``report=False``: for a caller that writes the report itself, with more in it).

    Returns the metrics dict::

        {"dataset": {"rows_train", "rows_test", "source", "split"},
         "bundle": {"version", "champions"}, "settings": {"alpha", "recall"},
         "targets": {t: {"classes", "edges", "unit", "models": {name: {...}},
                         "policies": {"argmax"|"safe"|"risk": {...}},
                         "calibration": {model: {"ece", "reliability"}}, "tradeoff": {...}}},
         "pipeline": {name: {"exact_match", "at_least", "mean_accuracy"}}}
    """
    if split not in ("random", "time"):
        raise EvaluationError(f"split={split!r}, expected 'random' or 'time'")
    targets = _check_compatible(predictor, table)
    train, test = table.split(split)  # type: ignore[arg-type]
    if test.empty:
        raise EvaluationError(f"table has no test rows in its {split!r} split")
    features = list(table.features)
    X_test = test[[f.name for f in predictor.feature_specs]]
    champions = {t: predictor.champion(t) for t in targets}
    runs: list[_TargetRun] = []
    metrics_targets: dict[str, Any] = {}
    n_steps = sum(len(predictor.models(t)) + 2 for t in targets) + 1
    with _steps(progress, n_steps) as step:
        for t in targets:
            run = _evaluate_target(predictor, t, (train, test), features, step)
            entry = run.entry()
            entry["champion"] = champions[t]
            entry |= _policy_figures(predictor, run, champions[t], X_test, alpha, recall)
            metrics_targets[t] = entry
            runs.append(run)
        step("report")
        metrics = {
            "dataset": {
                "rows_train": len(train),
                "rows_test": len(test),
                "source": table.source,
                "split": split,
            },
            "bundle": {"version": str(predictor.version), "champions": champions},
            "settings": {"alpha": alpha, "recall": recall},
            "warnings": _warnings(predictor, split),
            "targets": metrics_targets,
            "pipeline": _pipeline(runs, len(test), champions),
        }
        (write_outputs if report else write_metrics)(metrics, Path(out))
    return metrics


def _warnings(predictor: PredictorLike, split: str) -> list[str]:
    """Conditions that make the figures optimistic; printed and shown in the report."""
    manifest = getattr(predictor, "manifest", None) or {}
    trained_on = manifest.get("training", {}).get("split")
    if trained_on and trained_on != split:
        return [
            f"the bundle was trained on the {trained_on!r} split but is evaluated on the "
            f"{split!r} split: some test rows may have been training rows"
        ]
    return []


def _policy_figures(
    predictor: PredictorLike,
    run: _TargetRun,
    champion: str,
    X_test: pd.DataFrame,
    alpha: float,
    recall: float,
) -> dict[str, Any]:
    if champion not in run.probas:
        run.add_model(
            champion,
            predictor.predict_proba(X_test, targets=[run.target], model=champion)[run.target],
        )
    proba = run.probas[champion]
    cal_proba, cal_y = predictor.calibration(run.target, champion)
    cal_proba = np.asarray(cal_proba, dtype=float)
    cal_y = np.asarray(cal_y, dtype=np.int64)
    keep = (cal_y >= 0) & (cal_y < run.bins.n_classes)
    if not keep.any():
        raise EvaluationError(f"{run.target}/{champion}: the bundle's calibration set is empty")
    cal_proba, cal_y = cal_proba[keep], cal_y[keep]
    policies = evaluate_policies(
        proba, run.y, run.values, run.bins, cal_proba, cal_y,
        model=champion, alpha=alpha, recall=recall,
    )  # fmt: skip
    tradeoff = tradeoff_curves(proba, run.y, cal_proba, cal_y) | {"model": champion}
    allocation = allocation_figures(predictor, run.target, run.test, proba, alpha)
    return {
        "policies": policies, "tradeoff": tradeoff, "calibration_rows": len(cal_y),
        "allocation": allocation,
    }  # fmt: skip


def write_metrics(metrics: dict[str, Any], out: Path) -> Path:
    """metrics.json (strict JSON: no NaN/Infinity), renamed into place once complete."""
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(jsonable(metrics), indent=2, allow_nan=False) + "\n"
    return atomic_write_text(out / METRICS_FILE, text)


def write_outputs(metrics: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """metrics.json and the self-contained report.html."""
    return write_metrics(metrics, out), write_report(metrics, out / REPORT_FILE)
