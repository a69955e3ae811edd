"""Hyperparameter search: a k-fold grid for XGBoost (as the paper did), random search for the DNN.

Both return the winner together with every trial's settings and score, so the manifest
can show what was tried. The DNN search always tries the default settings first, so a
search never ends worse than no search on the validation set.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import optuna
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold

from scoutless.features.encoders import EncodedFeatures
from scoutless.models.dnn_model import DNNModel
from scoutless.models.dnn_params import DNNParams
from scoutless.models.xgb import _XGBModel

DEFAULT_XGB_GRID: dict[str, list[Any]] = {"max_depth": [4, 6, 8], "learning_rate": [0.1, 0.3]}
WIDTH_CHOICES: dict[str, tuple[int, ...]] = {
    "256-128-64": (256, 128, 64),
    "512-256-128": (512, 256, 128),
    "128-64-32": (128, 64, 32),
}
BATCH_CHOICES: tuple[int, ...] = (256, 512, 1024, 2048)


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in a stable order."""
    if not grid:
        return [{}]
    keys = sorted(grid)
    for k in keys:
        if isinstance(grid[k], str) or not len(grid[k]):
            raise ValueError(f"xgb grid entry {k!r} must be a non-empty list, got {grid[k]!r}")
    return [
        dict(zip(keys, values, strict=True))
        for values in itertools.product(*(grid[k] for k in keys))
    ]


def grid_search_xgb(
    make_model: Callable[[dict[str, Any]], _XGBModel],
    X: EncodedFeatures,
    y: np.ndarray,
    *,
    grid: Mapping[str, Sequence[Any]] | None = None,
    n_folds: int = 3,
    class_weight: np.ndarray | None = None,
    seed: int = 42,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Best grid point by mean macro-F1 over stratified folds (each fold early-stops on itself)."""
    points = grid_points(DEFAULT_XGB_GRID if grid is None else grid)
    folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=seed).split(X.codes, y))
    results = []
    for params in points:
        scores = []
        for fit_rows, held_rows in folds:
            model = make_model(params).fit(
                X.take(fit_rows),
                y[fit_rows],
                eval_set=(X.take(held_rows), y[held_rows]),
                class_weight=class_weight,
            )
            predicted = model.predict_proba(X.take(held_rows)).argmax(axis=1)
            scores.append(f1_score(y[held_rows], predicted, average="macro", zero_division=0))
        results.append({"params": params, "cv_macro_f1": float(np.mean(scores))})
    best = max(results, key=lambda r: r["cv_macro_f1"])
    return dict(best["params"]), results


def sample_dnn_params(trial: optuna.Trial, base: DNNParams) -> DNNParams:
    """One random point of the DNN search space (keeps base's epochs and patience)."""
    widths = WIDTH_CHOICES[trial.suggest_categorical("widths", list(WIDTH_CHOICES))]
    dropout = trial.suggest_float("dropout", 0.0, 0.5)
    return replace(
        base,
        learning_rate=trial.suggest_float("learning_rate", 3e-4, 1e-2, log=True),
        weight_decay=trial.suggest_float("weight_decay", 1e-7, 1e-3, log=True),
        batch_size=trial.suggest_categorical("batch_size", list(BATCH_CHOICES)),
        d_hidden=widths,
        dropouts=(dropout, *(0.75 * dropout for _ in widths[1:])),
    )


def _default_trial(base: DNNParams) -> dict[str, Any]:
    widths = {v: k for k, v in WIDTH_CHOICES.items()}.get(base.d_hidden, "256-128-64")
    return {
        "widths": widths,
        "dropout": base.dropouts[0],
        "learning_rate": base.learning_rate,
        "weight_decay": max(base.weight_decay, 1e-7),
        "batch_size": base.batch_size if base.batch_size in BATCH_CHOICES else 1024,
    }


def random_search_dnn(
    model: DNNModel,
    X: EncodedFeatures,
    y: np.ndarray,
    *,
    eval_set: tuple[EncodedFeatures, np.ndarray],
    class_weight: np.ndarray | None,
    trials: int,
    values: np.ndarray | None = None,
    seed: int = 42,
    on_trial: Callable[[int, float], None] | None = None,
) -> tuple[DNNModel, list[dict[str, Any]]]:
    """Optuna random search on validation accuracy; returns the best fitted model."""
    if trials < 1:
        raise ValueError(f"{trials=} must be positive")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.RandomSampler(seed=seed)
    )
    study.enqueue_trial(_default_trial(model.params))
    best: dict[str, Any] = {"score": -1.0, "model": None}
    log: list[dict[str, Any]] = []

    def objective(trial: optuna.Trial) -> float:
        params = sample_dnn_params(trial, model.params)
        fitted = model.with_params(params).fit(
            X, y, eval_set=eval_set, class_weight=class_weight, values=values
        )
        score = max(h["val_accuracy"] for h in fitted.history_)
        log.append({"trial": trial.number, "params": params.to_dict(), "val_accuracy": score})
        if score > best["score"]:
            best.update(score=score, model=fitted)
        if on_trial is not None:
            on_trial(trial.number, score)
        return score

    study.optimize(objective, n_trials=trials)
    return best["model"], log
