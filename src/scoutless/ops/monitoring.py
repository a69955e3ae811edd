"""Monitoring per time window: prediction quality against actuals, feature and prior drift.

Everything here is computed from three frames: the prediction log, the collected actuals
and the bundle's training reference (``predictor.reference()``), so the CLI report, the
alert rules and the Prometheus gauges all read one :class:`MonitorSnapshot`.

Windows are the prediction's ``created_at`` floored to ``every`` (``"1h"``, ``"1D"`` …): a
task is judged in the window its prediction was made, whenever its jobs finished.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from prometheus_client import CollectorRegistry, Gauge
from sklearn.metrics import confusion_matrix, f1_score

from scoutless.features.spec import FeatureSpec
from scoutless.ops.actuals import join_predictions
from scoutless.ops.drift import feature_drift, prior_drift
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import class_col

PERFORMANCE_COLUMNS = [
    "target", "window_start", "n", "accuracy", "macro_f1", "under_rate", "over_rate",
]  # fmt: skip
FEATURE_DRIFT_COLUMNS = [
    "window_start", "feature", "kind", "psi", "ks_stat", "ks_pvalue", "n_reference", "n_current",
]  # fmt: skip
PRIOR_DRIFT_COLUMNS = ["window_start", "target", "source", "psi", "tvd", "n"]
LONG_COLUMNS = ["window_start", "scope", "metric", "value", "n"]


def window_start(times: pd.Series, every: str) -> pd.Series:
    """Start of the window each timestamp falls in."""
    try:
        return pd.to_datetime(times).dt.floor(every)
    except ValueError as exc:
        raise ValueError(f"window size every={every!r} is not a pandas frequency: {exc}") from exc


def quality(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    """Accuracy, macro-F1 over the classes present, and the two allocation error rates.

    Under-allocation (predicted class below the actual one) kills jobs; over-allocation
    wastes slots. Classes are ordinal, so both are plain comparisons.
    """
    y_true = np.asarray(y_true, dtype=int)
    y_pred = np.asarray(y_pred, dtype=int)
    if y_true.size == 0:
        nan = float("nan")
        return {"accuracy": nan, "macro_f1": nan, "under_rate": nan, "over_rate": nan}
    labels = np.union1d(y_true, y_pred)
    return {
        "accuracy": float(np.mean(y_true == y_pred)),
        "macro_f1": float(
            f1_score(y_true, y_pred, labels=labels, average="macro", zero_division=0)
        ),
        "under_rate": float(np.mean(y_pred < y_true)),
        "over_rate": float(np.mean(y_pred > y_true)),
    }


def performance_by_window(joined: pd.DataFrame, every: str) -> pd.DataFrame:
    """One row per (target, window) of predictions that have an actual class."""
    if joined.empty:
        return pd.DataFrame(columns=PERFORMANCE_COLUMNS)
    frame = joined.assign(window_start=window_start(joined["created_at"], every))
    rows = []
    for (target, start), group in frame.groupby(["target", "window_start"], sort=True):
        metrics = quality(group["actual_class"].to_numpy(), group["class_id"].to_numpy())
        rows.append({"target": target, "window_start": start, "n": len(group), **metrics})
    return pd.DataFrame(rows, columns=PERFORMANCE_COLUMNS)


def confusion_by_target(joined: pd.DataFrame, bins: dict[str, TargetBins]) -> dict[str, np.ndarray]:
    """Confusion matrix (rows: actual, columns: predicted) per target over all joined rows."""
    out = {}
    for target, target_bins in bins.items():
        rows = joined[joined["target"] == target]
        if rows.empty:
            continue
        labels = list(range(target_bins.n_classes))
        out[target] = confusion_matrix(
            rows["actual_class"].astype(int), rows["class_id"].astype(int), labels=labels
        )
    return out


def logged_features(predictions: pd.DataFrame) -> pd.DataFrame:
    """One feature row per predicted task (the log repeats it for each target) + created_at."""
    rows = predictions.dropna(subset=["features"])
    rows = rows.drop_duplicates(subset=["request_id", "jeditaskid", "features"])
    if rows.empty:
        return pd.DataFrame({"created_at": pd.Series(dtype="datetime64[ns]")})
    decoded = pd.DataFrame([json.loads(text) for text in rows["features"]], index=rows.index)
    decoded["created_at"] = pd.to_datetime(rows["created_at"])
    return decoded.reset_index(drop=True)


def feature_drift_by_window(
    features: pd.DataFrame, reference: pd.DataFrame, specs: Sequence[FeatureSpec], every: str
) -> pd.DataFrame:
    if features.empty or reference.empty:
        return pd.DataFrame(columns=FEATURE_DRIFT_COLUMNS)
    starts = window_start(features["created_at"], every)
    parts = []
    for start, group in features.groupby(starts, sort=True):
        part = feature_drift(reference, group, specs)
        parts.append(part.assign(window_start=start))
    return pd.concat(parts, ignore_index=True)[FEATURE_DRIFT_COLUMNS]


def prior_drift_by_window(
    predictions: pd.DataFrame,
    joined: pd.DataFrame,
    reference: pd.DataFrame,
    bins: dict[str, TargetBins],
    every: str,
) -> pd.DataFrame:
    """Class shares of predicted (all logged) and actual (collected) classes vs training."""
    rows = []
    for source, frame, column in (
        ("predicted", predictions, "class_id"),
        ("actual", joined, "actual_class"),
    ):
        if frame.empty:
            continue
        starts = window_start(frame["created_at"], every)
        for (target, start), group in frame.groupby([frame["target"], starts], sort=True):
            if target not in bins or class_col(target) not in reference.columns:
                continue
            psi, tvd = prior_drift(
                reference[class_col(target)].to_numpy(),
                group[column].to_numpy(),
                bins[target].n_classes,
            )
            rows.append(
                {"window_start": start, "target": target, "source": source, "psi": psi,
                 "tvd": tvd, "n": len(group)}
            )  # fmt: skip
    return pd.DataFrame(rows, columns=PRIOR_DRIFT_COLUMNS)


@dataclass
class MonitorSnapshot:
    """Every monitored figure, per window; ``long()`` is what alert rules read."""

    every: str
    performance: pd.DataFrame
    feature_drift: pd.DataFrame
    prior_drift: pd.DataFrame
    confusion: dict[str, np.ndarray] = field(default_factory=dict)
    n_predictions: int = 0
    n_joined: int = 0

    def long(self) -> pd.DataFrame:
        """(window_start, scope, metric, value, n): scope is a target or a feature name."""
        parts = []
        if not self.performance.empty:
            perf = self.performance.melt(
                id_vars=["target", "window_start", "n"],
                value_vars=["accuracy", "macro_f1", "under_rate", "over_rate"],
                var_name="metric",
            ).rename(columns={"target": "scope"})
            parts.append(perf)
        if not self.feature_drift.empty:
            drift = self.feature_drift.melt(
                id_vars=["feature", "window_start", "n_current"],
                value_vars=["psi", "ks_stat", "ks_pvalue"],
                var_name="metric",
            ).rename(columns={"feature": "scope", "n_current": "n"})
            parts.append(drift)
        if not self.prior_drift.empty:
            prior = self.prior_drift.assign(metric="prior_psi_" + self.prior_drift["source"])
            parts.append(prior.rename(columns={"target": "scope", "psi": "value"})[LONG_COLUMNS])
        if not parts:
            return pd.DataFrame(columns=LONG_COLUMNS)
        out = pd.concat(parts, ignore_index=True)[LONG_COLUMNS]
        return out.dropna(subset=["value"]).sort_values(["window_start", "scope", "metric"])


def build_snapshot(
    predictions: pd.DataFrame,
    actuals: pd.DataFrame,
    bins: dict[str, TargetBins],
    *,
    reference: pd.DataFrame | None = None,
    specs: Sequence[FeatureSpec] = (),
    every: str = "1D",
    model_version: str | None = None,
) -> MonitorSnapshot:
    """All monitored figures from the log, the actuals and the training reference.

    ``model_version`` keeps only that model's predictions (the champion's, when deciding
    whether *it* needs replacing).
    """
    if model_version is not None:
        predictions = predictions[predictions["model_version"] == model_version]
    joined = join_predictions(predictions, actuals)
    reference = reference if reference is not None else pd.DataFrame()
    return MonitorSnapshot(
        every=every,
        performance=performance_by_window(joined, every),
        feature_drift=feature_drift_by_window(
            logged_features(predictions), reference, specs, every
        ),
        prior_drift=prior_drift_by_window(predictions, joined, reference, bins, every),
        confusion=confusion_by_target(joined, bins) if len(joined) else {},
        n_predictions=len(predictions),
        n_joined=len(joined),
    )


class MonitorGauges:
    """Prometheus gauges holding the latest window's figures (own registry, no globals)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.quality = Gauge(
            "scoutless_monitor_quality",
            "Prediction quality in the latest window against collected actuals",
            ["target", "metric"],
            registry=r,
        )
        self.samples = Gauge(
            "scoutless_monitor_window_samples",
            "Predictions with actuals in the latest window",
            ["target"],
            registry=r,
        )
        self.feature = Gauge(
            "scoutless_monitor_feature_drift",
            "Feature drift against the training reference in the latest window",
            ["feature", "metric"],
            registry=r,
        )
        self.prior = Gauge(
            "scoutless_monitor_class_prior_psi",
            "PSI of class shares against training in the latest window",
            ["target", "source"],
            registry=r,
        )
        self.alerts = Gauge(
            "scoutless_monitor_alerts_fired", "Alerts fired by the last rule check", registry=r
        )

    def update(self, snapshot: MonitorSnapshot, n_alerts: int | None = None) -> None:
        perf = _latest(snapshot.performance, "target")
        for row in perf.itertuples(index=False):
            self.samples.labels(target=row.target).set(row.n)
            for metric in ("accuracy", "macro_f1", "under_rate", "over_rate"):
                self.quality.labels(target=row.target, metric=metric).set(getattr(row, metric))
        for row in _latest(snapshot.feature_drift, "feature").itertuples(index=False):
            for metric in ("psi", "ks_stat", "ks_pvalue"):
                self.feature.labels(feature=row.feature, metric=metric).set(getattr(row, metric))
        prior = snapshot.prior_drift
        if not prior.empty:
            latest = prior.sort_values("window_start").groupby(["target", "source"]).tail(1)
            for row in latest.itertuples(index=False):
                self.prior.labels(target=row.target, source=row.source).set(row.psi)
        if n_alerts is not None:
            self.alerts.set(n_alerts)


def _latest(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    if frame.empty:
        return frame
    return frame.sort_values("window_start").groupby(key).tail(1)
