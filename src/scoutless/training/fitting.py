"""Fitting one model family on one target's parts, with its optional search and progress."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from scoutless.features.encoded import EncodedFeatures
from scoutless.features.encoders import FeatureEncoder
from scoutless.models.base import ClassModel, balanced_class_weight
from scoutless.models.dnn_model import DNNModel
from scoutless.models.dnn_params import DNNParams
from scoutless.models.families import family_class
from scoutless.models.guard import time_halves
from scoutless.models.tuning import (
    DEFAULT_DNN_VARIANTS,
    choose_dnn_variant,
    grid_search_xgb,
    random_search_dnn,
    variant_params,
)


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


def training_progress(enabled: bool) -> Progress:
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
    """One target's labelled rows per part (fit / validation / calibration).

    ``X``, ``y`` and ``rows`` (row numbers in the table's frame) are keyed by part;
    ``class_weight`` and ``values`` (continuous target values) belong to the fit part.
    """

    target: str
    n_classes: int
    X: dict[str, EncodedFeatures]
    y: dict[str, np.ndarray]
    rows: dict[str, np.ndarray]
    class_weight: np.ndarray
    values: np.ndarray
    #: the validation rows' time order (None: the split is not time-ordered)
    val_order: np.ndarray | None = None
    #: the fit rows' time order (None: the split is not time-ordered)
    fit_order: np.ndarray | None = None

    @property
    def validation(self) -> tuple[EncodedFeatures, np.ndarray]:
        return self.X["validation"], self.y["validation"]

    @property
    def refit_rows(self) -> tuple[EncodedFeatures, np.ndarray]:
        """The fit and validation rows together: what a refit sees (never the calibration
        rows, which must stay unseen by the served model for the risk policy's bound)."""
        parts = ("fit", "validation")
        X = EncodedFeatures.stack([self.X[p] for p in parts])
        return X, np.concatenate([self.y[p] for p in parts])


#: fits a constructed model on its rows, ``(model, X, y, *, eval_set, class_weight, values)``;
#: the default is the model's own ``fit``; ``--scheduler`` swaps in Dask / torchrun
#: (:class:`scoutless.distributed.fitting.DistributedFitter`)
ModelFitter = Callable[..., ClassModel]


def fit_in_process(
    model: ClassModel,
    X: EncodedFeatures,
    y: np.ndarray,
    *,
    eval_set: tuple[EncodedFeatures, np.ndarray],
    class_weight: np.ndarray | None = None,
    values: np.ndarray | None = None,
) -> ClassModel:
    return model.fit(X, y, eval_set=eval_set, class_weight=class_weight, values=values)


class FamilyTrainer:
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
        dnn_variants: Sequence[str] = DEFAULT_DNN_VARIANTS,
        fit_model: ModelFitter = fit_in_process,
        refit_latest: bool = False,
    ) -> None:
        self.encoder, self.trials, self.seed, self.n_jobs = encoder, trials, seed, n_jobs
        self.xgb_grid, self.dnn_params, self.progress = xgb_grid, dnn_params, progress
        self.dnn_variants = list(dnn_variants)
        self.fit_model = fit_model
        self.refit_latest = refit_latest

    def fit(self, name: str, data: TargetData) -> tuple[ClassModel, dict[str, Any]]:
        """The fitted model and its hyperparameters (with the search log, if one ran)."""
        cls = family_class(name)
        if issubclass(cls, DNNModel):  # the DNN takes the encoder's shapes, a random search
            return self._fit_dnn(data)
        return self._fit_params_model(name, cls, data)  # the rest: params + a k-fold grid

    def _fit_params_model(
        self, name: str, cls: type[ClassModel], data: TargetData
    ) -> tuple[ClassModel, dict[str, Any]]:
        task = self.progress.add_task(f"{data.target} {name}", total=1, status="")
        weight = data.class_weight

        def make(params: dict[str, Any]) -> ClassModel:
            return cls(n_classes=data.n_classes, params=params, n_jobs=self.n_jobs,  # type: ignore[call-arg]
                       seed=self.seed)  # fmt: skip

        params: dict[str, Any] = {}
        search: dict[str, Any] = {}
        if self.trials > 0 or self.xgb_grid is not None:
            self.progress.update(task, status="grid search (3-fold CV)")
            params, results = grid_search_xgb(
                make, data.X["fit"], data.y["fit"], grid=self.xgb_grid, class_weight=weight,
                seed=self.seed,
            )  # fmt: skip
            search = {"grid_search": results}
        model = self.fit_model(
            make(params), data.X["fit"], data.y["fit"], eval_set=data.validation,
            class_weight=weight,
        )  # fmt: skip
        self.progress.update(task, advance=1, status=f"{model.best_iteration_ + 1} trees")  # type: ignore[attr-defined]
        return model, {**model.hyperparameters(), **search}  # type: ignore[attr-defined]

    def refit(self, model: ClassModel, data: TargetData) -> tuple[ClassModel, dict[str, Any]]:
        """The model to serve and what the manifest records of it: on a time split
        (``refit_latest``), an XGBoost fit refitted on the fit and validation rows with its
        early-stopped number of trees scaled to their rows; otherwise ``model`` itself.

        Why: a time split fits on the oldest rows and validates on the latest, so the
        held-out fit never learns from the jobs just before it is deployed, while the
        user's last-2 always has (LPC-EGEE, walk-forward: the held-out xgb fell 0.035
        macro-F1 below its own input last-2 on walltime; refitted, it is above). On a
        random split the later parts hold nothing new, and the refit would only double
        the XGBoost time. The held-out fit's validation probabilities still choose the
        champion and tune the guard (the refit has seen those rows)."""
        if not (self.refit_latest and hasattr(model, "for_refit")):  # the XGBoost families
            return model, {}
        refit, record = self._refit_on(model, *data.refit_rows, data)
        return refit, {"refit": record}

    def _refit_on(
        self, model: ClassModel, X: EncodedFeatures, y: np.ndarray, data: TargetData
    ) -> tuple[ClassModel, dict[str, Any]]:
        """``model``'s early-stopped tree count scaled from the fit rows to ``y``'s, fitted
        on ``X``, ``y`` with balanced class weights and no early stopping."""
        unfitted = model.for_refit(len(y), len(data.y["fit"]))  # type: ignore[attr-defined]
        empty = (X.take(np.arange(0)), y[:0])
        weight = balanced_class_weight(y, data.n_classes)
        refit = self.fit_model(unfitted, X, y, eval_set=empty, class_weight=weight)
        return refit, {"rows": len(y), "trees": unfitted.n_estimators}

    def guard_proba(
        self, model: ClassModel, data: TargetData, val_proba: np.ndarray
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Validation probabilities for the guard, as the served model gives them.

        Where :meth:`refit` serves a refit on the latest rows, the later half of the
        validation rows (the half the guard chooses its rule on) is predicted by a refit
        on the fit rows and the earlier half: one step ahead of what it learned, as the
        served refit is. Why: the held-out fit never saw those latest rows, so a rule
        chosen on its probabilities leaned on last-2 more than the stronger served model
        needs (walk-forward, LPC-EGEE walltime: served 0.733 against 0.763 for its own
        refitted XGBoost). Otherwise: ``val_proba`` unchanged."""
        if not (self.refit_latest and hasattr(model, "for_refit")) or data.val_order is None:
            return val_proba, {}
        tune, select = time_halves(data.val_order, len(data.y["validation"]))
        if not (tune & ~select).any():
            return val_proba, {}
        X_val, y_val = data.validation
        earlier = np.flatnonzero(tune)
        X = EncodedFeatures.stack([data.X["fit"], X_val.take(earlier)])
        y = np.concatenate([data.y["fit"], y_val[earlier]])
        forward, record = self._refit_on(model, X, y, data)
        out = val_proba.copy()
        out[select] = forward.predict_proba(X_val.take(np.flatnonzero(select)))
        return out, {"guard_refit": record}

    def _new_dnn(self, data: TargetData, task: Any, offset: dict[str, int]) -> DNNModel:
        def on_epoch(epoch: int, record: dict[str, float]) -> None:
            self.progress.update(
                task,
                completed=offset["epochs"] + epoch,
                status=f"loss {record['train_loss']:.3f} val acc {record['val_accuracy']:.3f}",
            )

        return DNNModel(
            n_classes=data.n_classes,
            cardinalities=self.encoder.cardinalities,
            n_numerical=len(self.encoder.numerical),
            params=self.dnn_params,
            seed=self.seed,
            on_epoch=on_epoch,
        )

    def _fit_dnn(self, data: TargetData) -> tuple[ClassModel, dict[str, Any]]:
        """The best variant on validation (all recorded), searched further with ``trials``."""
        epochs = self.dnn_params.max_epochs
        total = epochs * (len(self.dnn_variants) + self.trials)
        task = self.progress.add_task(f"{data.target} dnn", total=total, status="")
        offset = {"epochs": -epochs}  # epochs of the variants before the one training

        def on_variant(name: str) -> None:
            offset["epochs"] += epochs
            self.progress.update(task, completed=offset["epochs"], status=name)

        if self.fit_model is fit_in_process:
            model, variants = choose_dnn_variant(
                self._new_dnn(data, task, offset), data.X["fit"], data.y["fit"],
                eval_set=data.validation, class_weight=data.class_weight,
                variants=self.dnn_variants, values=data.values, on_variant=on_variant,
            )  # fmt: skip
        else:  # --scheduler: no per-variant fits; the first variant trains on the ranks
            on_variant(self.dnn_variants[0])
            model = self._new_dnn(data, task, offset)
            model = model.with_params(variant_params(model.params, self.dnn_variants[0]))
            model = self.fit_model(
                model, data.X["fit"], data.y["fit"], eval_set=data.validation,
                class_weight=data.class_weight, values=data.values,
            )  # fmt: skip
            model.variant_, variants = self.dnn_variants[0], []
        search: dict[str, Any] = {"variant": model.variant_, "variant_search": variants}
        if self.trials > 0:
            model, log = self._search_dnn(model, data, task, total)
            search |= log
        model.on_epoch = None
        self.progress.update(task, completed=total)
        return model, {**model.hyperparameters(), **search}

    def _search_dnn(
        self, model: DNNModel, data: TargetData, task: Any, total: int
    ) -> tuple[DNNModel, dict[str, Any]]:
        epochs = self.dnn_params.max_epochs
        done = {"epochs": len(self.dnn_variants) * epochs}

        def on_trial(number: int, score: float) -> None:
            done["epochs"] = (len(self.dnn_variants) + number + 1) * epochs
            self.progress.update(task, completed=done["epochs"], status=f"trial {number}")

        model.on_epoch = lambda e, r: self.progress.update(
            task, completed=done["epochs"] + e, status=f"val acc {r['val_accuracy']:.3f}"
        )
        model, log = random_search_dnn(
            model, data.X["fit"], data.y["fit"], eval_set=data.validation,
            class_weight=data.class_weight, trials=self.trials, seed=self.seed,
            on_trial=on_trial, values=data.values,
        )  # fmt: skip
        return model, {"random_search": log}
