"""Walk-forward evaluation, as deployment works: retrain every period, predict the next.

From the table's time-split boundary on, the timeline is cut into periods (``30d``). For
each period a bundle is trained on the rows whose outcome was known when the period
began — submitted *and* finished before its start — and predicts the period's rows; their
history features already come only from jobs finished before each submission (the online
store's view). Tables without timestamps (PanDA job exports ordered by pandaid) are cut
into equal chunks of their submission order instead.

Reported per period and pooled over all periods, for every model, the served (guarded)
prediction and each baseline column (``{t}_<name>_class``; no class: training majority).
"""

from __future__ import annotations

import itertools
import json
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoutless.atomic import atomic_write_text
from scoutless.bundle import load_bundle
from scoutless.config import Settings
from scoutless.evaluation.baselines import column_baselines, column_predictions, majority_class
from scoutless.evaluation.metrics import classification_metrics
from scoutless.features.history import seconds
from scoutless.history.table import TrainingTable
from scoutless.targets.spec import class_col
from scoutless.training import TrainingError, train_bundle

_PERIOD = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
#: Periods when the table has no timestamps (equal chunks of submission order).
ORDER_CHUNKS = 3


class WalkForwardError(ValueError):
    """A period string or table the walk-forward evaluation cannot use."""


def parse_period(text: str, option: str = "--walk-forward") -> float:
    """``30d``, ``12h``, ``2w`` … in seconds (``option`` names it in errors)."""
    match = _PERIOD.match(text or "")
    if not match:
        raise WalkForwardError(f"{option} {text!r}: expected a number and s/m/h/d/w, e.g. 30d")
    seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
    if seconds <= 0:
        raise WalkForwardError(f"{option} {text!r}: the period must be positive")
    return seconds


def parse_retrain_every(text: str | None) -> float | None:
    """``7d`` … in seconds; None, empty or ``none``: one bundle per period."""
    if text is None or text.strip().lower() in ("", "none"):
        return None
    return parse_period(text, "--retrain-every")


@dataclass(frozen=True)
class Period:
    """One step: rows to train on and rows to predict."""

    label: str
    train: np.ndarray  # row positions in the table's frame
    test: np.ndarray


def _clock(table: TrainingTable) -> tuple[np.ndarray, np.ndarray, bool]:
    """(submit, known-at) per row on one axis, and whether it is wall-clock seconds."""
    frame = table.frame
    if "creationdate" in frame and frame["creationdate"].notna().any():
        submit = seconds(frame["creationdate"])
        known = seconds(frame["finished_at"]) if "finished_at" in frame else submit
        return submit, np.where(np.isfinite(known), known, np.inf), True
    order = table.info.get("order_column", "submit_order")
    if order not in frame:
        raise WalkForwardError("table has neither submit times nor an order column")
    submit = frame[order].to_numpy(dtype=float)
    return submit, submit, False


def periods(table: TrainingTable, period_s: float, max_periods: int | None = None) -> list[Period]:
    """Periods from the first row of the time split's test part to the last row."""
    submit, known, timed = _clock(table)
    is_test = table.frame["split_time"].eq("test").to_numpy()
    if not is_test.any():
        raise WalkForwardError("table has no test rows in its time split")
    start = float(np.nanmin(submit[is_test]))
    end = float(np.nanmax(submit))
    if timed:
        edges = list(np.arange(start, end, period_s))
        if len(edges) > 1 and end - edges[-1] < period_s / 2:
            edges.pop()  # a short tail joins the period before it
        edges.append(np.inf)
    else:
        edges = list(np.quantile(submit[submit >= start], np.linspace(0, 1, ORDER_CHUNKS + 1)))
        edges[-1] = np.inf
    if max_periods is not None and len(edges) - 1 > max_periods:
        edges = edges[-max_periods - 1 :]
    out = []
    for i, (lo, hi) in enumerate(itertools.pairwise(edges)):
        test = np.flatnonzero((submit >= lo) & (submit < hi))
        train = np.flatnonzero((submit < lo) & (known < lo))
        if len(test) and len(train):
            label = f"{pd.Timestamp(lo, unit='s'):%Y-%m-%d}" if timed else f"order chunk {i + 1}"
            out.append(Period(label, train, test))
    return out


def retrain_steps(table: TrainingTable, p: Period, retrain_s: float | None) -> list[Period]:
    """Period ``p`` cut every ``retrain_s`` seconds, as a deployment that retrains that
    often serves it: each part is predicted by a bundle trained on the rows known when the
    part began (None, or a table without a clock: the whole period, one bundle)."""
    submit, known, timed = _clock(table)
    if retrain_s is None or not timed:
        return [p]
    test_submit = submit[p.test]
    edges = [*np.arange(float(test_submit.min()), float(test_submit.max()), retrain_s), np.inf]
    parts = []
    for lo, hi in itertools.pairwise(edges):
        test = p.test[(test_submit >= lo) & (test_submit < hi)]
        train = np.flatnonzero((submit < lo) & (known < lo))
        if len(test) and len(train):
            parts.append(Period(p.label, train, test))
    return parts


@dataclass
class _Pooled:
    """Per target and predictor name: true and predicted classes over all periods."""

    y: dict[str, list[np.ndarray]] = field(default_factory=dict)
    pred: dict[str, dict[str, list[np.ndarray]]] = field(default_factory=dict)

    def add(self, target: str, y: np.ndarray, predictions: dict[str, np.ndarray]) -> None:
        self.y.setdefault(target, []).append(y)
        for name, p in predictions.items():
            self.pred.setdefault(target, {}).setdefault(name, []).append(p)


def _period_table(table: TrainingTable, p: Period, max_train: int | None) -> TrainingTable:
    train = p.train[-max_train:] if max_train else p.train  # the most recent rows
    rows = np.concatenate([train, p.test])
    frame = table.frame.iloc[rows].reset_index(drop=True)
    frame["split_time"] = np.where(np.arange(len(rows)) < len(train), "train", "test")
    return TrainingTable(frame, table.features, table.bins, table.source, table.info)


def _predict_period(
    sub: TrainingTable, bundle: Path, labels: dict[str, tuple[str, ...]]
) -> dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]:
    """Per target: (true classes, predictor name -> predicted classes) on the test rows."""
    predictor = load_bundle(bundle)
    train, test = sub.split("time")
    out: dict[str, tuple[np.ndarray, dict[str, np.ndarray]]] = {}
    X = test[[f.name for f in predictor.feature_specs]]
    encoded = predictor.encoder.transform(X)
    for t in sub.targets:
        y = test[class_col(t)].to_numpy(dtype=np.int64)
        valid = y >= 0
        n_classes = len(labels[t])
        preds = {
            m: predictor.predict_encoded(encoded, t, m).argmax(axis=1)[valid]
            for m in predictor.models(t)
        }
        ytrain = train[class_col(t)].to_numpy(dtype=np.int64)
        majority = majority_class(ytrain, n_classes)
        for b in column_baselines(test, t):
            preds[b.name] = column_predictions(test[valid], b.column, n_classes, majority)[0]
        out[t] = (y[valid], preds)
    return out


def _scores(y: np.ndarray, pred: np.ndarray, labels: tuple[str, ...]) -> dict[str, Any]:
    m = classification_metrics(y, pred, labels)
    return {"macro_f1": m["macro_f1"], "accuracy": m["accuracy"], "n": len(y)}


def _train_and_predict(
    table: TrainingTable,
    part: Any,
    max_train: int | None,
    entry: dict[str, Any],
    labels: dict[str, tuple[str, ...]],
    *,
    models: Sequence[str],
    seed: int,
    train_options: dict[str, Any] | None,
    settings: Settings,
) -> dict[str, tuple[np.ndarray, dict[str, np.ndarray]]] | None:
    """One retraining step: a bundle on the rows known when it takes over, its predictions
    of the step's rows (None, recorded in ``entry``, when training refuses the rows)."""
    sub = _period_table(table, part, max_train)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            bundle = train_bundle(
                sub, Path(tmp) / "bundle", models=models, split="time",
                progress=False, seed=seed, settings=settings, **(train_options or {}),
            )  # fmt: skip
        except TrainingError as exc:
            entry.setdefault("skipped", []).append(str(exc))
            return None
        predicted = _predict_period(sub, bundle, labels)
    entry["rows_train"].append(len(sub.frame) - len(part.test))
    return predicted


def walk_forward(
    table: TrainingTable,
    period: str,
    *,
    settings: Settings,
    models: Sequence[str] = ("xgb",),
    max_periods: int | None = None,
    max_train: int | None = None,
    seed: int = 42,
    train_options: dict[str, Any] | None = None,
    on_period: Callable[[int, int, str], None] | None = None,
    retrain_every: str | None = None,
) -> dict[str, Any]:
    """Per-period and pooled scores of every model, ``served`` and the baselines.

    ``retrain_every`` (``7d`` …, shorter than ``period``): within each period, a fresh
    bundle every so often, each trained on the rows known when it takes over — the same
    rows scored, as a deployment retraining that often would serve them (None or
    ``none``: one bundle per period)."""
    retrain_s = parse_retrain_every(retrain_every)
    steps = periods(table, parse_period(period), max_periods)
    if not steps:
        raise WalkForwardError("no period has both earlier finished rows and rows to predict")
    labels = {t: b.labels for t, b in table.bins.items()}
    pooled = _Pooled()
    per_period: list[dict[str, Any]] = []
    for i, p in enumerate(steps):
        if on_period:
            on_period(i, len(steps), p.label)
        entry: dict[str, Any] = {"period": p.label, "rows_train": []}
        period_pooled = _Pooled()
        for part in retrain_steps(table, p, retrain_s):
            predicted = _train_and_predict(table, part, max_train, entry, labels, models=models,
                                           seed=seed, train_options=train_options,
                                           settings=settings)  # fmt: skip
            for t, (y, preds) in (predicted or {}).items():
                period_pooled.add(t, y, preds)
        if not period_pooled.y:
            per_period.append({"period": p.label, "skipped": "; ".join(entry.get("skipped", []))})
            continue
        if len(entry["rows_train"]) == 1:
            entry["rows_train"] = entry["rows_train"][0]
        for t in period_pooled.y:
            y = np.concatenate(period_pooled.y[t])
            preds = {name: np.concatenate(parts) for name, parts in period_pooled.pred[t].items()}
            pooled.add(t, y, preds)
            entry[t] = {name: _scores(y, pr, labels[t]) for name, pr in preds.items()}
        per_period.append(entry)
    overall = {
        t: {
            name: _scores(np.concatenate(pooled.y[t]), np.concatenate(parts), labels[t])
            for name, parts in pooled.pred[t].items()
        }
        for t in pooled.y
    }
    return {
        "period": period, "retrain_every": retrain_every if retrain_s else period,
        "models": list(models),
        "periods": per_period, "overall": overall,
    }  # fmt: skip


WALK_FORWARD_FILE = "walk_forward.json"


def write_walk_forward(result: dict[str, Any], out: Path) -> Path:
    """``out/walk_forward.json``, written atomically."""
    return atomic_write_text(out / WALK_FORWARD_FILE, json.dumps(result, indent=1, default=str))
