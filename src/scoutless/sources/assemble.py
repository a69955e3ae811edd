"""From one normalised frame of trace jobs to a :class:`TrainingTable`, the same for every
format: time split, look-ahead-free baselines and user-history features, quantile bins
fitted on the training rows only, classes.

Every adapter produces a :class:`TraceJobs`; this module is the only place that decides
splits, bins and baselines, so all traces are treated alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from scoutless.config import HistorySettings, Settings
from scoutless.features.history import feature_name, frame_history, history_keys
from scoutless.features.spec import MEASURED_COLUMNS, FeatureSpec
from scoutless.history.splits import random_split, time_split
from scoutless.history.table import TrainingTable
from scoutless.models.guard import baseline_feature_columns
from scoutless.sources.baselines import user_request, with_fallback
from scoutless.sources.common import TraceParseError
from scoutless.targets.bins import BinsError, TargetBins, fit_target_bins, load_bins
from scoutless.targets.spec import (
    TARGET_NAMES,
    baseline_class_col,
    baseline_value_col,
    class_col,
    scout_class_col,
    scout_value_col,
    value_col,
)

BASELINES = ("user_request", "last2")


def request_col(target: str) -> str:
    """Column of a :class:`TraceJobs` frame holding the user's request for ``target``."""
    return f"{target}_request"


@dataclass
class TraceJobs:
    """One row per job of a trace, normalised by its adapter.

    ``frame`` holds ``jeditaskid`` (stable int id), ``creationdate`` (submit time, UTC),
    optionally ``finished_at`` (UTC) and ``user`` (enable last-2 and history features), the
    feature columns, ``{t}_value`` for each target in ``units``, and optionally
    ``{t}_request`` (the user's request in the target's unit) and ``{t}_scout_value``.
    """

    frame: pd.DataFrame
    features: list[FeatureSpec]
    units: dict[str, str]
    source: str
    info: dict[str, Any] = field(default_factory=dict)
    bad_lines: list[TraceParseError] = field(default_factory=list)
    #: the column giving submission order (``creationdate`` unless the trace has no times)
    order_column: str = "creationdate"

    def __post_init__(self) -> None:
        leaked = sorted({f.name for f in self.features} & MEASURED_COLUMNS)
        if leaked:
            raise ValueError(f"{self.source}: measured columns used as features: {leaked}")
        unknown = sorted(set(self.units) - set(TARGET_NAMES))
        if unknown:
            raise ValueError(f"{self.source}: unknown targets {unknown}, expected {TARGET_NAMES}")


def _add_history(
    frame: pd.DataFrame, targets: list[str], cfg: HistorySettings
) -> tuple[pd.DataFrame, list[FeatureSpec]]:
    """History features of every key (user, application) and the last-2 baseline values."""
    requests = {
        t: user_request(frame[request_col(t)].to_numpy(dtype=float))
        for t in targets
        if request_col(t) in frame
    }
    history, specs = frame_history(frame, targets, requests, cfg=cfg)
    if feature_name("user", "n_finished") in history:
        for t in targets:
            history[baseline_value_col(t, "last2")] = with_fallback(
                history[feature_name("user", "mean2", t)].to_numpy(dtype=float), requests.get(t)
            )
    return pd.concat([frame, history], axis=1), specs


def _class_category(bins: TargetBins, values: pd.Series) -> pd.Series:
    """A past value's class as a category ("none" without history): a lookup the DNN can
    embed directly instead of having to learn the bin edges from a standardised number."""
    classes = bins.classify(values.to_numpy(dtype=float))
    return pd.Series(np.where(classes < 0, "none", classes.astype(str)), index=values.index)


def _fit_trace_bins(
    frame: pd.DataFrame, units: dict[str, str], n_quantiles: int | None, min_values: int
) -> tuple[dict[str, TargetBins], dict[str, str]]:
    """Quantile bins per target over the time split's training rows only (no look-ahead
    into the test period), and the targets dropped with the reason."""
    train = frame["split_time"].eq("train").to_numpy()
    shipped = load_bins(targets=[t for t in units if t in TARGET_NAMES])
    bins: dict[str, TargetBins] = {}
    dropped: dict[str, str] = {}
    for t, unit in units.items():
        if value_col(t) not in frame.columns:
            continue
        values = frame[value_col(t)].to_numpy(dtype=float)[train]
        n_known = int(np.isfinite(values).sum())
        if n_known < min_values:
            dropped[t] = f"{n_known} training values (< {min_values})"
            continue
        n = n_quantiles or shipped[t].n_classes
        section = {"mode": "quantiles", "n_classes": n, "unit": unit}
        try:
            bins[t] = fit_target_bins(t, section, values)
        except BinsError as exc:
            dropped[t] = str(exc)
    return bins, dropped


def _add_classes(frame: pd.DataFrame, t: str, b: TargetBins) -> list[FeatureSpec]:
    """Target ``t``'s class, its baselines' and scouts' classes, and the user's history
    baselines' classes as inputs (in place); those inputs' feature specs."""
    specs: list[FeatureSpec] = []
    frame[class_col(t)] = b.classify(frame[value_col(t)].to_numpy(dtype=float))
    if request_col(t) in frame:
        frame[baseline_value_col(t, "user_request")] = user_request(frame[request_col(t)])
    for name in BASELINES:
        col = baseline_value_col(t, name)
        if col in frame:
            frame[baseline_class_col(t, name)] = b.classify(frame[col].to_numpy(dtype=float))
    if scout_value_col(t) in frame:
        frame[scout_class_col(t)] = b.classify(frame[scout_value_col(t)].to_numpy(dtype=float))
    for name, column in baseline_feature_columns(t).items():
        source = baseline_value_col(t, name)
        if source in frame:  # each input baseline's class as a feature (read by the guard)
            frame[column] = _class_category(b, frame[source])
            specs.append(FeatureSpec(column, "categorical", "history", f"{name} baseline class"))
    return specs


def to_training_table(
    jobs: TraceJobs,
    *,
    settings: Settings,
    n_quantiles: int | None = None,
    history_features: bool = True,
    test_fraction: float | None = None,
    seed: int = 42,
) -> TrainingTable:
    """The trace as a training table (see the module docstring for every choice).

    ``n_quantiles`` classes per target (default: as many as the shipped bins have);
    ``test_fraction`` defaults to ``Settings.splits.test_fraction``.
    """
    test_fraction = test_fraction or settings.splits.test_fraction
    frame = jobs.frame.copy()
    targets = [t for t in jobs.units if value_col(t) in frame.columns]
    has_value = frame[[value_col(t) for t in targets]].notna().any(axis=1)
    n_no_target = int((~has_value).sum())
    frame = frame[has_value].sort_values([jobs.order_column, "jeditaskid"], kind="stable")
    frame = frame.reset_index(drop=True)
    if frame.empty:
        raise TraceParseError("no job has a usable target value", source=jobs.source)
    features = list(jobs.features)
    frame["split_time"] = time_split(frame[jobs.order_column].to_numpy(), test_fraction)
    frame["split_random"] = random_split(len(frame), seed=seed, test_fraction=test_fraction)
    if history_features and "finished_at" in frame and history_keys(list(frame.columns)):
        frame, added = _add_history(frame, targets, settings.history)
        features += added

    bins, dropped = _fit_trace_bins(
        frame, jobs.units, n_quantiles, settings.training.min_train_values
    )
    for t, b in bins.items():
        features += _add_classes(frame, t, b)
    if not bins:
        raise TraceParseError(f"no target could be binned: {dropped}", source=jobs.source)

    info = {
        **jobs.info,
        "n_rows": len(frame),
        "order_column": jobs.order_column,
        "split": "time",  # traces are evaluated on their last submit times (train/evaluate)
        "n_rows_without_target": n_no_target,
        "n_bad_lines": len(jobs.bad_lines),
        "bad_lines": [str(e) for e in jobs.bad_lines[:20]],
        "bins": "quantiles of the time-split training rows (first "
        f"{1 - test_fraction:.0%} of submit times)",
        "units": {t: jobs.units[t] for t in bins},
        "dropped_targets": dropped,
        "baselines": [n for n in BASELINES if any(baseline_class_col(t, n) in frame for t in bins)],
    }
    return TrainingTable(frame, features, bins, source=jobs.source, info=info)
