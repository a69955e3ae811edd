"""Training orchestration: a TrainingTable in, a complete model bundle out.

Wiring, in order (each step's effect in its comment):

1. the table's train split only — the test split stays unseen for evaluation;
2. train rows -> fit / validation / calibration parts (``Settings.splits``), stratified on
   the joint class key with a fixed seed (a time split: fit on the earliest rows, the
   others on the latest) — validation drives early stopping, tuning, temperature, the
   champion and its guard; calibration stays held out for the risk/safe policies;
3. encoders fitted on the fit part — values first seen later count as unknown, as they will
   in service;
4. per target (rows with class -1 dropped), per family: class weights inverse to frequency,
   optional search, fit, validation metrics; on a time split an XGBoost fit is then
   refitted on the fit and validation rows to be served (``Settings.training.
   refit_latest``: the fit part is the oldest rows and would never learn from the latest),
   the held-out fit's validation probabilities still feeding step 5; calibration
   probabilities from the served model, which never saw the calibration rows;
5. champion per target: best mean of validation accuracy and macro-F1, wrapped in the
   guard that keeps the served prediction at least as good as the input baselines on
   validation (:mod:`scoutless.training.guarding`);
   then each target's value model (:mod:`scoutless.training.value_heads`): a value
   distribution per task, calibrated on the calibration part for the value and cost
   allocations;
6. bins as the table fitted them on its training rows; everything written atomically by
   :func:`scoutless.bundle.save_bundle`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoutless.bundle import BundleContents, save_bundle
from scoutless.config import Settings, SplitSettings
from scoutless.features.encoded import EncodedFeatures
from scoutless.features.encoders import FeatureEncoder
from scoutless.history.splits import assign_parts, forward_parts
from scoutless.history.table import SPLIT_COLUMNS, TrainingTable
from scoutless.models.base import ClassModel, balanced_class_weight
from scoutless.models.dnn_params import DNNParams
from scoutless.models.families import FAMILY_NAMES
from scoutless.models.guard import ServingGuard
from scoutless.models.tuning import DEFAULT_DNN_VARIANTS
from scoutless.models.value_model import LogValueModel
from scoutless.targets.spec import class_col, value_col
from scoutless.training.fitting import (
    FamilyTrainer,
    ModelFitter,
    TargetData,
    fit_in_process,
    torch_threads,
    training_progress,
)
from scoutless.training.guarding import fit_target_guard
from scoutless.training.lanes import Lanes, plan_lanes, run_in_lanes
from scoutless.training.manifest import base_manifest, choose_champion, headline_metrics
from scoutless.training.value_heads import fit_value_heads

MIN_TRAIN_ROWS = 10


class TrainingError(ValueError):
    """A table or option that training cannot work with (named, with what was expected)."""


def check_model_names(models: Sequence[str]) -> list[str]:
    names = [m.strip() for m in models if m.strip()]
    unknown = [m for m in names if m not in FAMILY_NAMES]
    if unknown or not names:
        raise TrainingError(f"models {unknown or names} unknown; choose from {list(FAMILY_NAMES)}")
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class PreparedRows:
    """The train rows of one split, their parts, and the encoder fitted on the fit part."""

    train: pd.DataFrame
    positions: np.ndarray  # row numbers of ``train`` in the table's frame
    parts: np.ndarray
    encoder: FeatureEncoder
    encoded: EncodedFeatures
    #: per row of the table's frame, its time order on a time split (None otherwise)
    order: np.ndarray | None = None


def _parts(
    table: TrainingTable, train: pd.DataFrame, split: str, seed: int, splits: SplitSettings
) -> np.ndarray:
    """A time split keeps time (fit on the earliest rows, validate and calibrate on the
    latest: :func:`forward_parts`); a random split stratifies on the joint class key."""
    fractions = splits.part_fractions()
    order = _order_column(table)
    if split == "time" and order is not None:
        return forward_parts(train[order].rank(method="first").to_numpy(), fractions, seed)
    strata = np.column_stack([train[class_col(t)].to_numpy() for t in table.targets])
    return assign_parts(strata, fractions, seed=seed)


def _order_column(table: TrainingTable) -> str | None:
    """The column giving submission order, where every row has one."""
    column = table.info.get("order_column", "creationdate")
    frame = table.frame
    return column if column in frame and frame[column].notna().all() else None


def prepare_rows(
    table: TrainingTable, split: str, seed: int, splits: SplitSettings
) -> PreparedRows:
    """Steps 1-3: the split's train rows, their stratified parts, the fitted encoder."""
    train = table.split(split)[0]  # type: ignore[arg-type]
    # row numbers of the train rows in table.frame (TrainingTable.split keeps non-"test" rows)
    positions = np.flatnonzero((table.frame[SPLIT_COLUMNS[split]] != "test").to_numpy())
    if len(train) < MIN_TRAIN_ROWS:
        raise TrainingError(
            f"split {split!r} has {len(train)} train rows; need at least {MIN_TRAIN_ROWS}"
        )
    parts = _parts(table, train, split, seed, splits)
    encoder = FeatureEncoder(table.features).fit(train[parts == "fit"])
    column = _order_column(table) if split == "time" else None
    order = None if column is None else table.frame[column].rank(method="first").to_numpy()
    return PreparedRows(train, positions, parts, encoder, encoder.transform(train), order)


def target_data(
    table: TrainingTable, prep: PreparedRows, target: str, splits: SplitSettings
) -> TargetData:
    """One target's labelled rows in each part (rows with class -1 left out)."""
    n_classes = table.bins[target].n_classes
    y = prep.train[class_col(target)].to_numpy()
    parts = splits.part_fractions()
    rows = {p: np.flatnonzero((prep.parts == p) & (y >= 0)) for p in parts}
    for p, r in rows.items():
        if len(r) == 0:
            raise TrainingError(f"target {target!r}: no labelled rows in the {p} part")
    Y = {p: y[r].astype(np.int64) for p, r in rows.items()}
    values = prep.train[value_col(target)].to_numpy(dtype=float)
    return TargetData(
        target=target,
        n_classes=n_classes,
        X={p: prep.encoded.take(r) for p, r in rows.items()},
        y=Y,
        rows={p: prep.positions[r] for p, r in rows.items()},
        class_weight=balanced_class_weight(Y["fit"], n_classes),
        values=values[rows["fit"]],
        val_order=None if prep.order is None else prep.order[prep.positions[rows["validation"]]],
        fit_order=None if prep.order is None else prep.order[prep.positions[rows["fit"]]],
    )


@dataclass
class TargetResults:
    """Step 4's outputs for one target, keyed by family."""

    models: dict[str, ClassModel] = field(default_factory=dict)
    hyperparameters: dict[str, dict[str, Any]] = field(default_factory=dict)
    validation: dict[str, dict[str, Any]] = field(default_factory=dict)
    calibration: dict[str, dict[str, Any]] = field(default_factory=dict)
    calibration_sets: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=dict
    )
    seconds: dict[str, float] = field(default_factory=dict)
    validation_proba: dict[str, np.ndarray] = field(default_factory=dict)
    guard_proba: dict[str, np.ndarray] = field(default_factory=dict)
    guard: ServingGuard | None = None


@dataclass(frozen=True)
class FamilyFit:
    """One family fitted on one target, with what the bundle records of it."""

    model: ClassModel
    hyperparameters: dict[str, Any]
    seconds: float
    validation_proba: np.ndarray
    validation: dict[str, Any]
    calibration_set: tuple[np.ndarray, np.ndarray, np.ndarray]
    calibration: dict[str, Any]
    #: validation probabilities as served, for the guard (``FamilyTrainer.guard_proba``)
    guard_proba: np.ndarray


def fit_family(
    trainer: FamilyTrainer, data: TargetData, name: str, labels: tuple[str, ...]
) -> FamilyFit:
    """Fit, validation metrics and calibration probabilities of one family on one target,
    and the model served (the fit itself, or its refit on a time split:
    ``FamilyTrainer.refit``). Calibration rows are predicted by the served model, which
    never saw them: the risk policy's bound holds for what is served."""
    start = time.perf_counter()
    model, hyper = trainer.fit(name, data)
    val_X, val_y = data.validation
    val_proba = model.predict_proba(val_X)  # held out: the figures, champion and guard
    served, refit = trainer.refit(model, data)
    guard_proba, guard_refit = trainer.guard_proba(model, data, val_proba)
    cal_proba = served.predict_proba(data.X["calibration"])
    seconds = round(time.perf_counter() - start, 3)
    return FamilyFit(
        served, {**hyper, **refit, **guard_refit}, seconds, val_proba,
        headline_metrics(val_y, val_proba, labels),
        (cal_proba, data.y["calibration"], data.rows["calibration"]),
        headline_metrics(data.y["calibration"], cal_proba, labels), guard_proba,
    )  # fmt: skip


def target_results(fits: dict[str, FamilyFit]) -> TargetResults:
    """Step 4's outputs for one target from its families' fits (in the families' order)."""
    out = TargetResults()
    for name, fit in fits.items():
        out.models[name], out.hyperparameters[name] = fit.model, fit.hyperparameters
        out.seconds[name] = fit.seconds
        out.validation_proba[name], out.validation[name] = fit.validation_proba, fit.validation
        out.calibration_sets[name], out.calibration[name] = fit.calibration_set, fit.calibration
        out.guard_proba[name] = fit.guard_proba
    return out


#: which fits start first when several run at once: the longest (a DNN's variant search
#: and epochs; then native categoricals), and within a family the targets with more classes
#: (XGBoost grows a tree per class and round), so the lanes end on short fits. Each fit
#: keeps its thread count throughout, so a bundle does not depend on which lane ran what.
_FIT_ORDER = {"dnn": 0, "xgb_native": 1}


def _reference_sample(
    prep: PreparedRows, targets: list[str], seed: int, reference_rows: int
) -> pd.DataFrame:
    """Fit-part rows (``Settings.training.reference_rows`` at most) with their classes:
    the drift monitor's picture of the training data."""
    fit_rows = prep.train[prep.parts == "fit"]
    n = min(reference_rows, len(fit_rows))
    sample = fit_rows.sample(n, random_state=seed)
    reference = prep.encoder.validate(sample).reset_index(drop=True)
    for t in targets:
        reference[class_col(t)] = sample[class_col(t)].to_numpy()
    return reference


def _contents(
    table: TrainingTable,
    prep: PreparedRows,
    results: dict[str, TargetResults],
    run: dict[str, Any],
    values: dict[str, tuple[LogValueModel, np.ndarray]],
    reference_rows: int,
) -> BundleContents:
    """Steps 5-6: the manifest with metrics and champions, and what save_bundle writes."""
    manifest = base_manifest(table, run)
    manifest["training"]["train_seconds"] = {t: r.seconds for t, r in results.items()}
    manifest["hyperparameters"] = {t: r.hyperparameters for t, r in results.items()}
    manifest["validation_metrics"] = {t: r.validation for t, r in results.items()}
    manifest["calibration_metrics"] = {t: r.calibration for t, r in results.items()}
    manifest["champion"] = {t: choose_champion(r.validation) for t, r in results.items()}
    manifest["guard"] = {t: r.guard.to_dict() for t, r in results.items() if r.guard}
    return BundleContents(
        manifest,
        prep.encoder,
        {t: r.models for t, r in results.items()},
        {t: r.calibration_sets for t, r in results.items()},
        _reference_sample(prep, table.targets, int(run["seed"]), reference_rows),
        value_models={t: model for t, (model, _) in values.items()},
        value_scores={t: scores for t, (_, scores) in values.items()},
    )


def _fit_targets(
    trainer: FamilyTrainer,
    table: TrainingTable,
    prep: PreparedRows,
    datas: dict[str, TargetData],
    names: list[str],
    lanes: Lanes,
    settings: Settings,
) -> dict[str, TargetResults]:
    """Step 4 for every target and family, in lanes; then each target's champion guard."""
    fits = [(t, name) for t in datas for name in names]
    fits.sort(key=lambda fit: (_FIT_ORDER.get(fit[1], 2), -datas[fit[0]].n_classes))
    done = run_in_lanes(
        [partial(fit_family, trainer, datas[t], n, table.bins[t].labels) for t, n in fits],
        lanes.lanes,
    )
    by_fit = dict(zip(fits, done, strict=True))
    results: dict[str, TargetResults] = {}
    for target, data in datas.items():
        result = target_results({name: by_fit[target, name] for name in names})
        champion = choose_champion(result.validation)
        result.guard = fit_target_guard(
            data, prep.encoder, champion, result.guard_proba[champion], settings.history
        )
        results[target] = result
    return results


def _refits_latest(split: str, prep: PreparedRows, refit_latest: bool) -> bool:
    """Whether the served XGBoost models are refitted on the latest rows: on a time split
    (rows in submission order), unless ``Settings.training.refit_latest`` is off."""
    return split == "time" and prep.order is not None and refit_latest


def train_bundle(
    table: TrainingTable,
    out: Path,
    *,
    models: Sequence[str] = FAMILY_NAMES,
    trials: int = 0,
    seed: int = 42,
    split: str = "random",
    progress: bool = True,
    max_epochs: int | None = None,
    xgb_grid: dict[str, list[Any]] | None = None,
    dnn_params: DNNParams | None = None,
    n_jobs: int | None = None,
    dnn_variants: Sequence[str] = DEFAULT_DNN_VARIANTS,
    fit_model: ModelFitter | None = None,
    parallel_fits: int | None = None,
    settings: Settings,
) -> Path:
    """Train every requested family for every target of ``table`` and write a bundle.

    ``trials`` > 0 turns on the searches: the XGBoost k-fold grid (``xgb_grid``, default
    :data:`~scoutless.models.tuning.DEFAULT_XGB_GRID`) and ``trials`` DNN random trials;
    an explicit ``xgb_grid`` runs the grid even with ``trials=0``. ``dnn_variants`` names
    the DNN variants (:data:`~scoutless.models.tuning.DNN_VARIANTS`) tried per target; the
    best on validation is kept (and searched further with ``trials``), recorded in the
    manifest's hyperparameters. ``fit_model`` replaces
    each model's own ``fit`` (``--scheduler``: XGBoost on Dask, the DNN on torchrun).
    ``parallel_fits``: fits trained at once, sharing the ``n_jobs`` threads (default
    ``Settings.training.parallel_fits``; :mod:`scoutless.training.lanes`).
    """
    names = check_model_names(models)
    if trials < 0:
        raise TrainingError(f"{trials=} must be >= 0")
    prep = prepare_rows(table, split, seed, settings.splits)
    params = dnn_params or DNNParams()
    if max_epochs is not None:
        params = replace(params, max_epochs=max_epochs)
    if parallel_fits is None:
        parallel_fits = settings.training.parallel_fits
    datas = {t: target_data(table, prep, t, settings.splits) for t in table.targets}
    # a --scheduler fit spreads itself over its cluster: those run one at a time
    lanes = plan_lanes(n_jobs, len(datas) * len(names), parallel_fits if fit_model is None else 1)
    with training_progress(progress) as bar, torch_threads(lanes.threads):
        refit = _refits_latest(split, prep, settings.training.refit_latest)
        trainer = FamilyTrainer(encoder=prep.encoder, trials=trials, seed=seed,
                                n_jobs=lanes.threads, xgb_grid=xgb_grid, dnn_params=params,
                                progress=bar, dnn_variants=dnn_variants,
                                fit_model=fit_model or fit_in_process,
                                refit_latest=refit)  # fmt: skip
        results = _fit_targets(trainer, table, prep, datas, names, lanes, settings)
        values = fit_value_heads(table, datas, n_jobs=n_jobs, seed=seed, settings=settings.training)
    parts = settings.splits.part_fractions()
    run = {
        "split": split, "seed": seed, "trials": trials, "models": names,
        "parts": {p: int((prep.parts == p).sum()) for p in parts},
        "n_train_rows": len(prep.train),
        **{"parallel_fits": lanes.lanes, "threads_per_fit": lanes.threads},
    }  # fmt: skip
    reference_rows = settings.training.reference_rows
    return save_bundle(out, _contents(table, prep, results, run, values, reference_rows))
