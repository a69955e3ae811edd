"""Training orchestration: a TrainingTable in, a complete model bundle out.

Wiring, in order (each step's effect in its comment):

1. the table's train split only — the test split stays unseen for evaluation;
2. train rows -> fit / validation / calibration parts, stratified on the joint class key
   with a fixed seed — validation drives early stopping, tuning, temperature and the
   champion; calibration stays held out for the risk/safe policies;
3. encoders fitted on the fit part — values first seen later count as unknown, as they will
   in service;
4. per target (rows with class -1 dropped), per family: class weights inverse to frequency,
   optional search, fit, validation metrics, calibration probabilities;
5. champion per target: best mean of validation accuracy and macro-F1;
6. everything written atomically by :func:`scoutless.bundle.save_bundle`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import platform
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from sklearn.metrics import accuracy_score, f1_score

from scoutless.bundle import BundleContents, save_bundle
from scoutless.config import get_settings
from scoutless.evaluation.baselines import majority_class
from scoutless.features.encoders import EncodedFeatures, FeatureEncoder
from scoutless.history.splits import assign_parts, forward_parts
from scoutless.history.table import SPLIT_COLUMNS, TrainingTable
from scoutless.models.base import ClassModel, balanced_class_weight
from scoutless.models.dnn_model import DNNModel
from scoutless.models.dnn_params import DNNParams
from scoutless.models.guard import (
    ServingGuard,
    baseline_classes,
    baseline_feature_columns,
    fit_guard,
)
from scoutless.models.tuning import grid_search_xgb, random_search_dnn
from scoutless.models.xgb import XGBLabelModel, XGBNativeModel
from scoutless.targets.spec import class_col, value_col

MODEL_NAMES: tuple[str, ...] = ("xgb", "xgb_native", "dnn")
PART_FRACTIONS: dict[str, float] = get_settings().splits.part_fractions()
REFERENCE_ROWS = 5000


class TrainingError(ValueError):
    """A table or option that training cannot work with (named, with what was expected)."""


def check_model_names(models: Sequence[str]) -> list[str]:
    names = [m.strip() for m in models if m.strip()]
    unknown = [m for m in names if m not in MODEL_NAMES]
    if unknown or not names:
        raise TrainingError(f"models {unknown or names} unknown; choose from {list(MODEL_NAMES)}")
    return list(dict.fromkeys(names))


def data_fingerprint(table: TrainingTable) -> str:
    """sha256 over the table's rows and metadata: same data, same fingerprint."""
    digest = hashlib.sha256()
    digest.update(pd.util.hash_pandas_object(table.frame, index=False).to_numpy().tobytes())
    digest.update(json.dumps(table.metadata(), sort_keys=True, default=str).encode())
    return digest.hexdigest()


def library_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in (
        "scoutless",
        "numpy",
        "pandas",
        "scikit-learn",
        "xgboost-cpu",
        "xgboost",
        "torch",
        "optuna",
    ):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[dist] = metadata.version(dist)
    return out


def classification_metrics(y: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    predicted = proba.argmax(axis=1)
    return {
        "accuracy": float(accuracy_score(y, predicted)) if len(y) else float("nan"),
        "macro_f1": float(f1_score(y, predicted, average="macro", zero_division=0)),
        "n": len(y),
    }


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Limit torch's intra-op threads while training, then restore them."""
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _progress(enabled: bool) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[status]}"),
        disable=not enabled,
    )


@dataclass(frozen=True)
class TargetData:
    """One target's fit rows, validation rows, class weights and continuous values."""

    target: str
    n_classes: int
    X: EncodedFeatures
    y: np.ndarray
    validation: tuple[EncodedFeatures, np.ndarray]
    class_weight: np.ndarray
    values: np.ndarray

    def unpack(self) -> tuple:
        return self.target, self.n_classes, self.X, self.y, self.validation, self.class_weight


class _FamilyTrainer:
    """Fits one family on one target's parts; knows the shared options of the run."""

    def __init__(
        self,
        *,
        encoder: FeatureEncoder,
        trials: int,
        seed: int,
        n_jobs: int | None,
        xgb_grid: dict[str, list[Any]] | None,
        dnn_params: DNNParams,
        progress: Progress,
    ) -> None:
        self.encoder, self.trials, self.seed, self.n_jobs = encoder, trials, seed, n_jobs
        self.xgb_grid, self.dnn_params, self.progress = xgb_grid, dnn_params, progress

    def fit(self, name: str, data: TargetData) -> tuple[ClassModel, dict[str, Any]]:
        if name == "dnn":
            return self._fit_dnn(data)
        return self._fit_xgb(name, data)

    def _fit_xgb(self, name: str, data: TargetData) -> tuple[ClassModel, dict[str, Any]]:
        target, n_classes, X, y, val, weight = data.unpack()
        cls = XGBLabelModel if name == "xgb" else XGBNativeModel
        task = self.progress.add_task(f"{target} {name}", total=1, status="")

        def make(params: dict[str, Any]) -> ClassModel:
            return cls(n_classes=n_classes, params=params, n_jobs=self.n_jobs, seed=self.seed)

        params: dict[str, Any] = {}
        search: dict[str, Any] = {}
        if self.trials > 0 or self.xgb_grid is not None:
            self.progress.update(task, status="grid search (3-fold CV)")
            params, results = grid_search_xgb(
                make, X, y, grid=self.xgb_grid, class_weight=weight, seed=self.seed
            )
            search = {"grid_search": results}
        model = make(params).fit(X, y, eval_set=val, class_weight=weight)
        self.progress.update(task, advance=1, status=f"{model.best_iteration_ + 1} trees")
        return model, {**model.hyperparameters(), **search}

    def _fit_dnn(self, data: TargetData) -> tuple[ClassModel, dict[str, Any]]:
        target, n_classes, X, y, val, weight = data.unpack()
        values = data.values
        epochs = self.dnn_params.max_epochs
        task = self.progress.add_task(f"{target} dnn", total=epochs, status="")

        def on_epoch(epoch: int, record: dict[str, float]) -> None:
            self.progress.update(
                task,
                completed=epoch,
                status=f"loss {record['train_loss']:.3f} val acc {record['val_accuracy']:.3f}",
            )

        model = DNNModel(
            n_classes=n_classes,
            cardinalities=self.encoder.cardinalities,
            n_numerical=len(self.encoder.numerical),
            params=self.dnn_params,
            seed=self.seed,
            on_epoch=on_epoch,
        )
        search: dict[str, Any] = {}
        total = epochs * max(self.trials, 1)
        if self.trials > 0:
            self.progress.update(task, total=total)
            done = {"epochs": 0}

            def on_trial(number: int, score: float) -> None:
                done["epochs"] = (number + 1) * epochs
                self.progress.update(task, completed=done["epochs"], status=f"trial {number}")

            model.on_epoch = lambda e, r: self.progress.update(
                task, completed=done["epochs"] + e, status=f"val acc {r['val_accuracy']:.3f}"
            )
            model, log = random_search_dnn(
                model,
                X,
                y,
                eval_set=val,
                class_weight=weight,
                trials=self.trials,
                seed=self.seed,
                on_trial=on_trial,
                values=values,
            )
            search = {"random_search": log}
        else:
            model.fit(X, y, eval_set=val, class_weight=weight, values=values)
        model.on_epoch = None
        self.progress.update(task, completed=total)
        return model, {**model.hyperparameters(), **search}


def choose_champion(metrics: dict[str, dict[str, float]]) -> str:
    """The model with the best mean of validation accuracy and macro-F1 (first on ties)."""
    return max(metrics, key=lambda m: (metrics[m]["accuracy"] + metrics[m]["macro_f1"]) / 2)


@dataclass(frozen=True)
class GuardInputs:
    target: str
    n_classes: int
    champion: str
    encoder: FeatureEncoder


def _fit_target_guard(
    what: GuardInputs,
    X_val: EncodedFeatures,
    y_val: np.ndarray,
    val_order: np.ndarray | None,
    val_proba: dict[str, np.ndarray],
    y_train: np.ndarray,
) -> ServingGuard | None:
    """The champion's served rule (:mod:`scoutless.models.guard`), None without a baseline
    input or with too few validation rows.

    With time-ordered validation rows (``val_order``), the prior and the macro-F1 offsets
    are fitted on the earlier half and the rule is chosen on the later half: each step is
    judged on rows it has not seen, one step ahead, as it will serve.
    """
    baselines = {
        name: baseline_classes(X_val, what.encoder, column, what.n_classes)
        for name, column in baseline_feature_columns(what.target).items()
        if column in what.encoder.categorical
    }
    if not baselines or len(y_val) < get_settings().history.guard_min_rows:
        return None
    select = np.ones(len(y_val), dtype=bool)
    tune = select
    if val_order is not None:
        select = val_order >= np.median(val_order)
        tune = ~select if (~select).any() else select
    proba = val_proba[what.champion]
    prior = np.bincount(y_val[tune], minlength=what.n_classes) / max(int(tune.sum()), 1)
    return fit_guard(
        what.target, what.champion, y_val[select], proba[select],
        {name: classes[select] for name, classes in baselines.items()},
        recent_prior=prior, majority=majority_class(y_train, what.n_classes),
        tune=(y_val[tune], proba[tune]),
    )  # fmt: skip


def _training_parts(
    table: TrainingTable, train: pd.DataFrame, split: str, seed: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """Fit/validation/calibration per training row, and the rows' time order (or None).

    A time split keeps time: the earliest rows are fitted on, the latest validate and
    calibrate (:func:`forward_parts`); a random split stratifies on the joint class key."""
    order_column = table.info.get("order_column", "creationdate")
    order = None
    if split == "time" and order_column in train and train[order_column].notna().all():
        order = pd.Series(train[order_column]).rank(method="first").to_numpy()
        return forward_parts(order, PART_FRACTIONS, seed), order
    strata = np.column_stack([train[class_col(t)].to_numpy() for t in table.targets])
    return assign_parts(strata, PART_FRACTIONS, seed=seed), order


def train_bundle(
    table: TrainingTable,
    out: Path,
    *,
    models: Sequence[str] = MODEL_NAMES,
    trials: int = 0,
    seed: int = 42,
    split: str = "random",
    progress: bool = True,
    max_epochs: int | None = None,
    xgb_grid: dict[str, list[Any]] | None = None,
    dnn_params: DNNParams | None = None,
    n_jobs: int | None = None,
) -> Path:
    """Train every requested family for every target of ``table`` and write a bundle.

    ``trials`` > 0 turns on the searches: the XGBoost k-fold grid (``xgb_grid``, default
    :data:`~scoutless.models.tuning.DEFAULT_XGB_GRID`) and ``trials`` DNN random trials;
    an explicit ``xgb_grid`` runs the grid even with ``trials=0``.
    """
    names = check_model_names(models)
    if trials < 0:
        raise TrainingError(f"{trials=} must be >= 0")
    train = table.split(split)[0]  # type: ignore[arg-type]
    # row numbers of the train rows in table.frame (TrainingTable.split keeps non-"test" rows)
    positions = np.flatnonzero((table.frame[SPLIT_COLUMNS[split]] != "test").to_numpy())
    if len(train) < 10:
        raise TrainingError(f"split {split!r} has {len(train)} train rows; need at least 10")
    targets = table.targets
    parts, order = _training_parts(table, train, split, seed)
    encoder = FeatureEncoder(table.features).fit(train[parts == "fit"])
    encoded = encoder.transform(train)
    params = dnn_params or DNNParams()
    if max_epochs is not None:
        params = replace(params, max_epochs=max_epochs)

    fitted: dict[str, dict[str, ClassModel]] = {}
    calibration: dict[str, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    hyper: dict[str, dict[str, Any]] = {}
    val_metrics: dict[str, dict[str, Any]] = {}
    cal_metrics: dict[str, dict[str, Any]] = {}
    seconds: dict[str, dict[str, float]] = {}
    val_proba: dict[str, dict[str, np.ndarray]] = {}
    guards: dict[str, dict[str, Any]] = {}
    with _progress(progress) as bar, torch_threads(n_jobs):
        trainer = _FamilyTrainer(
            encoder=encoder,
            trials=trials,
            seed=seed,
            n_jobs=n_jobs,
            xgb_grid=xgb_grid,
            dnn_params=params,
            progress=bar,
        )
        for target in targets:
            n_classes = table.bins[target].n_classes
            y = train[class_col(target)].to_numpy()
            rows = {p: np.flatnonzero((parts == p) & (y >= 0)) for p in PART_FRACTIONS}
            for p, r in rows.items():
                if len(r) == 0:
                    raise TrainingError(f"target {target!r}: no labelled rows in the {p} part")
            X = {p: encoded.take(r) for p, r in rows.items()}
            Y = {p: y[r].astype(np.int64) for p, r in rows.items()}
            target_values = train[value_col(target)].to_numpy(dtype=float)
            data = TargetData(
                target, n_classes, X["fit"], Y["fit"], (X["validation"], Y["validation"]),
                balanced_class_weight(Y["fit"], n_classes), target_values[rows["fit"]],
            )  # fmt: skip
            for key in (fitted, calibration, hyper, val_metrics, cal_metrics, seconds, val_proba):
                key[target] = {}
            for name in names:
                start = time.perf_counter()
                model, hp = trainer.fit(name, data)
                seconds[target][name] = round(time.perf_counter() - start, 3)
                fitted[target][name] = model
                hyper[target][name] = hp
                val_proba[target][name] = model.predict_proba(X["validation"])
                val_metrics[target][name] = classification_metrics(
                    Y["validation"], val_proba[target][name]
                )
                cal_proba = model.predict_proba(X["calibration"])
                cal_rows = positions[rows["calibration"]]
                calibration[target][name] = (cal_proba, Y["calibration"], cal_rows)
                cal_metrics[target][name] = classification_metrics(Y["calibration"], cal_proba)
            guard = _fit_target_guard(
                GuardInputs(target, n_classes, choose_champion(val_metrics[target]), encoder),
                X["validation"], Y["validation"],
                None if order is None else order[rows["validation"]],
                val_proba[target], y[y >= 0],
            )  # fmt: skip
            if guard is not None:
                guards[target] = guard.to_dict()

    fingerprint = data_fingerprint(table)
    created = datetime.now(UTC)
    bins = table.bins  # fitted on the table's training rows: the bundle recommends the same
    manifest = {
        "version": f"{created:%Y%m%dT%H%M%SZ}-{fingerprint[:8]}",
        "created": created.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "data_fingerprint": fingerprint,
        "source": table.source,
        "table_info": table.info,
        "features": [f.to_dict() for f in table.features],
        "targets": targets,
        "bins": {t: b.to_dict() for t, b in bins.items()},
        "library_versions": library_versions(),
        "training": {
            "split": split,
            "seed": seed,
            "trials": trials,
            "models": names,
            "parts": {p: int((parts == p).sum()) for p in PART_FRACTIONS},
            "n_train_rows": len(train),
            "train_seconds": seconds,
        },
        "hyperparameters": hyper,
        "validation_metrics": val_metrics,
        "calibration_metrics": cal_metrics,
        "champion": {t: choose_champion(val_metrics[t]) for t in targets},
        "guard": guards,
    }
    reference = _reference_sample(train[parts == "fit"], encoder, targets, seed)
    contents = BundleContents(manifest, encoder, fitted, calibration, reference)
    return save_bundle(out, contents)


def _reference_sample(
    fit_rows: pd.DataFrame, encoder: FeatureEncoder, targets: list[str], seed: int
) -> pd.DataFrame:
    sample = fit_rows.sample(min(REFERENCE_ROWS, len(fit_rows)), random_state=seed)
    reference = encoder.validate(sample).reset_index(drop=True)
    for t in targets:
        reference[class_col(t)] = sample[class_col(t)].to_numpy()
    return reference
