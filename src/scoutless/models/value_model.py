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

Both boosters are saved with their trees in numpy (checked against them at save,
:mod:`~scoutless.models.xgb_inference`): a loaded model predicts a few rows from those
without importing XGBoost, which it reads only for larger batches or bundles saved without.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

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
#: the two boosters, by attribute and file stem
BOOSTERS = {"location_": "location", "scale_": "scale"}


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
        import xgboost as xgb

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
        self.location_ = location[: location.best_iteration + 1]
        residual = logged_val - self.location_.inplace_predict(X_val)
        log_abs = np.log(np.maximum(np.abs(residual), 1e-6)) - _LOG_ABS_NORMAL
        self.scale_ = xgb.train(
            self._params(SCALE_PARAMS), xgb.DMatrix(X_val, log_abs), num_boost_round=SCALE_ROUNDS
        )
        self.trees_ = {}
        return self

    def __getattr__(self, name: str) -> Any:
        """A booster of a model loaded from its trees, built when first asked for (from the
        file's bytes, read at load: the model stays the one loaded if the file changes)."""
        raw = self.__dict__.get("_raw", {}).get(name)
        if raw is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        import xgboost as xgb

        booster = xgb.Booster()
        booster.load_model(raw)
        setattr(self, name, booster)
        return booster

    def _predict(self, name: str, matrix: np.ndarray) -> np.ndarray:
        """One booster's predictions: from its trees in numpy for a few rows, if it has them."""
        trees = self.trees_.get(name)
        if trees is not None and len(matrix) <= SMALL_BATCH and trees.fits(len(matrix)):
            return trees.predict_value(matrix)
        booster = getattr(self, name)
        return np.asarray(booster.inplace_predict(matrix, validate_features=False))

    def predict_dist(self, X: EncodedFeatures) -> ValueDistribution:
        """The task's value as ``-1 + exp(N(mu, sigma))`` (value in the target's unit)."""
        check_fitted(self, "trees_")
        matrix = tree_matrix(X)
        mu = self._predict("location_", matrix).astype(float)
        log_sigma = self._predict("scale_", matrix)
        sigma = np.maximum(np.exp(log_sigma.astype(float)), _MIN_SIGMA)
        return ValueDistribution.of(-1.0, mu, sigma)

    def save(self, folder: Path) -> list[str]:
        check_fitted(self, "trees_")
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, stem in BOOSTERS.items():
            booster = getattr(self, name)
            booster.save_model(folder / f"{stem}.ubj")
            written.append(f"{stem}.ubj")
            trees = self.trees_.get(name) or compile_booster(booster)
            if trees is not None:
                trees.save(folder / f"{stem}.trees.npz")
                written.append(f"{stem}.trees.npz")
        meta = {"n_estimators": self.n_estimators, "seed": self.seed}
        (folder / "value.json").write_text(json.dumps(meta))
        return [*written, "value.json"]

    @classmethod
    def load(cls, folder: Path) -> LogValueModel:
        meta = json.loads((folder / "value.json").read_text())
        model = cls(n_estimators=meta["n_estimators"], seed=meta["seed"])
        # the boosters' bytes, built into boosters on first need (see __getattr__)
        model._raw = {n: bytearray((folder / f"{s}.ubj").read_bytes()) for n, s in BOOSTERS.items()}
        model.trees_ = {}
        for name, stem in BOOSTERS.items():
            trees = folder / f"{stem}.trees.npz"
            # saved without its trees: compiled now (and checked), not on the first request
            model.trees_[name] = (
                TreeEnsemble.load(trees)
                if trees.exists()
                else compile_booster(getattr(model, name))
            )
        return model
