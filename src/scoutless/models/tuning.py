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
from sklearn.metrics import confusion_matrix, f1_score
from sklearn.model_selection import StratifiedKFold, train_test_split

from scoutless.features.encoded import EncodedFeatures
from scoutless.models.dnn_model import DNNModel
from scoutless.models.dnn_params import DNNParams
from scoutless.models.paired_bootstrap import macro_f1_accuracy, resampled_f1_accuracy
from scoutless.models.xgb import XGBModel

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
    make_model: Callable[[dict[str, Any]], XGBModel],
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


#: named DNN variants; ``choose_dnn_variant`` picks one on validation. "ordinal": the
#: cumulative-probit head whose latent is the standardised log value; "ordinal_tempered":
#: the same with class weights^0.5 (accuracy first, rare classes still count more)
DNN_VARIANTS: dict[str, dict[str, Any]] = {
    "reference": {},
    "ordinal": {"head": "ordinal", "aux_weight": 1.0},
    "ordinal_tempered": {"head": "ordinal", "aux_weight": 1.0, "class_weight_power": 0.5},
    "ple": {"ple_bins": 16},
    "onecycle": {"schedule": "onecycle"},
}
#: what ``train_bundle`` tries by default: the reference first (it wins ties)
DEFAULT_DNN_VARIANTS: tuple[str, ...] = ("reference", "ordinal", "ordinal_tempered")
#: variants are compared on at most this many fit rows; the winner is then refitted on all
SELECTION_ROWS = 50_000


def variant_params(base: DNNParams, name: str) -> DNNParams:
    """``base`` with the named variant's options on top."""
    if name not in DNN_VARIANTS:
        raise ValueError(f"DNN variant {name!r} unknown; choose from {list(DNN_VARIANTS)}")
    return replace(base, **DNN_VARIANTS[name])


def _subsample(y: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Sorted row numbers of a class-stratified random subsample of ``n`` rows."""
    rows, _ = train_test_split(np.arange(len(y)), train_size=n, stratify=y, random_state=seed)
    return np.sort(rows)


def choose_dnn_variant(
    model: DNNModel,
    X: EncodedFeatures,
    y: np.ndarray,
    *,
    eval_set: tuple[EncodedFeatures, np.ndarray],
    class_weight: np.ndarray | None,
    variants: Sequence[str],
    values: np.ndarray | None = None,
    on_variant: Callable[[str], None] | None = None,
    selection_rows: int = SELECTION_ROWS,
) -> tuple[DNNModel, list[dict[str, Any]]]:
    """Fit each named variant; keep the best mean of validation accuracy and macro-F1.

    A lead inside the noise of that mean does not decide (see :func:`pick_variant`). With
    more than ``selection_rows`` fit rows, variants are compared on a stratified subsample
    of that size, validated (early stopping, temperature, score) on at most as many
    validation rows, and only the winner is trained on all rows (one full fit, not one per
    variant).
    """
    if not variants:
        raise ValueError("choose_dnn_variant needs at least one variant")
    X_val, y_val = eval_set
    sub = None
    if len(variants) > 1 and len(y) > selection_rows:
        sub = _subsample(y, selection_rows, model.seed)
        if len(y_val) > selection_rows:  # an epoch's validation pass cost a third of it
            val_rows = _subsample(y_val, selection_rows, model.seed)
            X_val, y_val = X_val.take(val_rows), y_val[val_rows]
    fits: list[DNNModel] = []
    probas: list[np.ndarray] = []
    for name in variants:
        if on_variant is not None:
            on_variant(name)
        fitted = model.with_params(variant_params(model.params, name))
        if sub is None:
            fitted.fit(X, y, eval_set=eval_set, class_weight=class_weight, values=values)
        else:
            part_values = None if values is None else values[sub]
            fitted.fit(X.take(sub), y[sub], eval_set=(X_val, y_val), class_weight=class_weight,
                       values=part_values)  # fmt: skip
        fits.append(fitted)
        probas.append(fitted.predict_proba(X_val))
    chosen, log = pick_variant(y_val, probas, list(variants), seed=model.seed)
    for record in log:
        record["fit_rows"] = len(y) if sub is None else len(sub)
    winner = fits[chosen]
    if sub is not None:
        winner = model.with_params(winner.params).fit(
            X, y, eval_set=eval_set, class_weight=class_weight, values=values
        )
    winner.variant_ = variants[chosen]
    return winner, log


#: block-bootstrap resamples behind a variant's lead (see :func:`pick_variant`)
TIE_RESAMPLES = 400
TIE_BLOCKS = 200


def pick_variant(
    y: np.ndarray, probas: Sequence[np.ndarray], names: Sequence[str], *, seed: int = 0
) -> tuple[int, list[dict[str, Any]]]:
    """The variant to keep, and a record per variant.

    The score is the mean of accuracy and macro-F1. Variants differ by trade-offs (class
    weights move rows between accuracy and the rare classes' F1), so two of them often
    score within noise of each other, and an argmax pick among them is a coin toss whose
    loser can be the one with the better accuracy by a point. A variant whose score is
    within one paired-bootstrap standard error of the leader's is therefore a contender,
    and among contenders the lowest validation log-loss (a proper score of the whole
    probability, far less noisy than an argmax count) decides. The first listed wins exact
    ties.
    """
    n_classes = probas[0].shape[1]
    predicted = [p.argmax(axis=1) for p in probas]
    pairs = resampled_f1_accuracy(y, predicted, np.arange(len(y)), n_classes,
                                  n_blocks=TIE_BLOCKS, n_resamples=TIE_RESAMPLES, seed=seed)  # fmt: skip
    resampled = [(f1 + acc) / 2 for f1, acc in pairs]
    scores = [macro_f1_accuracy(confusion_matrix(y, p, labels=range(n_classes))) for p in predicted]
    combined = np.array([(f1 + acc) / 2 for f1, acc in scores])
    leader = int(np.argmax(combined))
    lead_se = np.array([float(np.std(resampled[leader] - r)) for r in resampled])
    contender = combined[leader] - combined <= lead_se
    log_loss = np.array([_log_loss(y, p) for p in probas])
    chosen = int(np.flatnonzero(contender)[np.argmin(log_loss[contender])])
    log = [
        dict(
            variant=name,
            val_accuracy=float(acc),
            val_macro_f1=float(f1),
            val_rows=len(y),
            val_log_loss=float(log_loss[i]),
            lead_se=float(lead_se[i]),
            contender=bool(contender[i]),
        )
        for i, (name, (f1, acc)) in enumerate(zip(names, scores, strict=True))
    ]
    return chosen, log


def _log_loss(y: np.ndarray, proba: np.ndarray) -> float:
    """Mean negative log-likelihood of the true classes (probabilities floored at 1e-12)."""
    return float(-np.log(np.maximum(proba[np.arange(len(y)), y], 1e-12)).mean())
