"""A task's value distribution from its submission features: the value head every bundle
has beside its class models, whichever family is champion.

Two gradient-boosted trees on ``log1p`` of the value: one for the location (squared
error, early-stopped on validation), one for the scale, fitted on the validation rows'
residuals (the location never saw them, so the residuals are honest): ``log |r|`` has
mean ``log sigma - (gamma + log 2) / 2`` for a Gaussian residual, so its regression gives
``log sigma`` up to that constant. The result is ``-1 + exp(N(mu, sigma))`` per task
(:class:`~scoutless.allocation.values.ValueDistribution`); its marginal calibration is
the conformal step's job (``ConformalLevels``), so the scale needs to rank tasks by
their spread, not to be exact.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import xgboost as xgb

from scoutless.allocation.values import ValueDistribution
from scoutless.features.encoders import SMALL_BATCH, EncodedFeatures
from scoutless.models.base import check_fitted
from scoutless.models.xgb import booster_params, tree_matrix
from scoutless.models.xgb_inference import TreeEnsemble, compile_booster

#: E[log |Z|] for Z ~ N(0, 1): -(Euler's gamma + log 2) / 2
_LOG_ABS_NORMAL = -0.6351814227
_MIN_SIGMA = 1e-3

LOCATION_PARAMS: dict[str, Any] = {
    "max_depth": 6, "learning_rate": 0.08, "min_child_weight": 2.0, "subsample": 0.8,
    "colsample_bytree": 0.8, "reg_lambda": 1.0, "max_bin": 256,
}  # fmt: skip
SCALE_PARAMS: dict[str, Any] = {
    "max_depth": 3, "learning_rate": 0.05, "min_child_weight": 20.0, "subsample": 0.8,
    "reg_lambda": 5.0, "max_bin": 64,
}  # fmt: skip
SCALE_ROUNDS = 150


def _known(values: np.ndarray) -> np.ndarray:
    return np.isfinite(values) & (values > -1)


class LogValueModel:
    """``fit(X, values, eval_set=(X_val, values_val))`` → ``predict_dist(X)``."""

    def __init__(self, *, n_estimators: int = 600, n_jobs: int | None = None, seed: int = 42):
        if n_estimators < 1:
            raise ValueError(f"{n_estimators=} must be positive")
        self.n_estimators = n_estimators
        self.n_jobs = n_jobs
        self.seed = seed

    def _params(self, base: dict[str, Any]) -> dict[str, Any]:
        return booster_params(
            base, seed=self.seed, n_jobs=self.n_jobs, objective="reg:squarederror"
        )

    def fit(
        self,
        X: EncodedFeatures,
        values: np.ndarray,
        *,
        eval_set: tuple[EncodedFeatures, np.ndarray],
    ) -> LogValueModel:
        """Location on the rows with a known value; scale on the validation residuals."""
        values, val_values = np.asarray(values, float), np.asarray(eval_set[1], float)
        fit, val = _known(values), _known(val_values)
        if fit.sum() < 2 or val.sum() < 2:
            raise ValueError(
                f"value model: {fit.sum()} fit and {val.sum()} validation rows with a value"
            )
        train = xgb.DMatrix(tree_matrix(X.take(np.flatnonzero(fit))), np.log1p(values[fit]))
        X_val = tree_matrix(eval_set[0].take(np.flatnonzero(val)))
        logged_val = np.log1p(val_values[val])
        location = xgb.train(
            self._params(LOCATION_PARAMS), train, num_boost_round=self.n_estimators,
            evals=[(xgb.DMatrix(X_val, logged_val), "validation")],
            early_stopping_rounds=30, verbose_eval=False,
        )  # fmt: skip
        location = location[: location.best_iteration + 1]
        residual = logged_val - location.inplace_predict(X_val)
        log_abs = np.log(np.maximum(np.abs(residual), 1e-6)) - _LOG_ABS_NORMAL
        scale = xgb.train(
            self._params(SCALE_PARAMS), xgb.DMatrix(X_val, log_abs), num_boost_round=SCALE_ROUNDS
        )
        self._set_boosters(location, scale)
        return self

    def _set_boosters(self, location: xgb.Booster, scale: xgb.Booster) -> None:
        """As the class models (``XGBModel._set_booster``): one-thread copies for small
        batches, and the trees in numpy for a few rows, where ``inplace_predict``'s fixed
        cost (~0.3 ms a call, two calls per target) was most of a served task's CPU."""
        self.location_, self.scale_ = location, scale
        self._small = []
        for booster in (location, scale):
            small = booster.copy()
            small.set_param({"nthread": 1})
            self._small.append(small)
        self.__dict__.pop("tree_ensembles", None)  # compiled again from these boosters

    @functools.cached_property
    def tree_ensembles(self) -> list[TreeEnsemble] | None:
        """Location and scale in numpy (None: left to ``inplace_predict``), compiled on
        first use; a loaded (served) model compiles them at load."""
        compiled = [compile_booster(b) for b in self._small]
        return None if any(t is None for t in compiled) else compiled  # type: ignore[misc]

    def _predict_both(self, matrix: np.ndarray) -> list[np.ndarray]:
        boosters = [self.location_, self.scale_]
        if len(matrix) <= SMALL_BATCH:
            trees = self.tree_ensembles
            if trees is not None and all(t.fits(len(matrix)) for t in trees):
                return [t.predict(matrix) for t in trees]
            boosters = self._small
        return [b.inplace_predict(matrix, validate_features=False) for b in boosters]

    def predict_dist(self, X: EncodedFeatures) -> ValueDistribution:
        """The task's value as ``-1 + exp(N(mu, sigma))`` (value in the target's unit)."""
        check_fitted(self, "location_")
        mu, log_sigma = self._predict_both(tree_matrix(X))
        sigma = np.maximum(np.exp(np.asarray(log_sigma).astype(float)), _MIN_SIGMA)
        return ValueDistribution.of(-1.0, np.asarray(mu, float), sigma)

    def save(self, folder: Path) -> list[str]:
        check_fitted(self, "location_")
        folder.mkdir(parents=True, exist_ok=True)
        self.location_.save_model(folder / "location.ubj")
        self.scale_.save_model(folder / "scale.ubj")
        meta = {"n_estimators": self.n_estimators, "seed": self.seed}
        (folder / "value.json").write_text(json.dumps(meta))
        return ["location.ubj", "scale.ubj", "value.json"]

    @classmethod
    def load(cls, folder: Path) -> LogValueModel:
        meta = json.loads((folder / "value.json").read_text())
        model = cls(n_estimators=meta["n_estimators"], seed=meta["seed"])
        location, scale = xgb.Booster(), xgb.Booster()
        location.load_model(folder / "location.ubj")
        scale.load_model(folder / "scale.ubj")
        model._set_boosters(location, scale)
        _ = model.tree_ensembles  # compiled at load, not on the first served request
        return model
