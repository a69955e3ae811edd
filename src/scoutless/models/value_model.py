"""A task's value distribution from its submission features: the value head every bundle
has beside its class models, whichever family is champion.

Gradient-boosted trees on ``log1p`` of the value, cross-fitted on the fit and validation
rows together (``folds`` parts: seeded, or in blocks of time on a time-ordered history,
:func:`fold_of`): each fold's location (squared error) is fitted on
the other folds and early-stopped on its own, starting (``linear``) from a ridge regression
on the one-hot categories and the numericals fitted on those same folds
(:mod:`~scoutless.models.value_linear`: it lowers the location's error on every target of
the 20k demo, the trees left to fit the interactions), so every row gets an out-of-fold residual
that no location saw. The served location is one booster refitted on all those rows with
the folds' mean number of trees (one ensemble to walk per request, not ``folds``), on top
of the ridge refitted on all those rows (a few look-ups and a dot product per request). The
scale is one more tree ensemble on the out-of-fold residuals: ``log |r|`` has mean
``log sigma - (gamma + log 2) / 2`` for a Gaussian residual, so its regression gives
``log sigma`` up to that constant. The result is ``-1 + exp(N(mu, sigma))`` per task
(:class:`~scoutless.allocation.values.ValueDistribution`); its marginal calibration is
the conformal step's job (``ConformalLevels``, on the calibration part, which no fold
saw), so the scale needs to rank tasks by their spread, not to be exact.

A bundle written before the ridge has no ``linear.npz``: its location is its trees alone,
as it was fitted.

Why cross-fitting: with the scale fitted on the validation part's residuals alone (the
layout before it) the scale saw a sixth of the rows, and the location was early-stopped
on that same sixth. A bundle written before holds the same files (``location.ubj``,
``scale.ubj``) and loads unchanged.

Both boosters are saved with their trees in numpy (checked against them at save,
:mod:`~scoutless.models.xgb_inference`): a loaded model predicts a few rows from those
without importing XGBoost, which it reads only for larger batches or bundles saved without.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from scoutless.allocation.values import ValueDistribution
from scoutless.fast_paths import current
from scoutless.features.encoded import EncodedFeatures
from scoutless.models.base import check_fitted
from scoutless.models.value_linear import JointLinear, LinearBase, choose_alpha
from scoutless.models.xgb import booster_from_bytes, booster_params, tree_matrix
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
EARLY_STOPPING_ROUNDS = 30
#: the two boosters, by attribute and file stem
BOOSTERS = {"location_": "location", "scale_": "scale"}


def _known(values: np.ndarray) -> np.ndarray:
    return np.isfinite(values) & (values > -1)


def fold_of(n: int, folds: int, seed: int, order: np.ndarray | None = None) -> np.ndarray:
    """(n,) each row's fold, 0 .. folds - 1, as equal as can be: in a seeded order, or,
    given the rows' time ``order``, in contiguous blocks of time.

    Why blocks on a time-ordered history: its jobs come in bursts of near-copies (one
    user's submissions), and random folds put a burst's copies on both sides of a fold,
    so the out-of-fold residuals (the scale's data) and the early-stopped number of trees
    look as if the future were the past. Blocks keep a burst inside one fold (the
    blocked cross-validation of Bergmeir & Benitez 2012, Roberts et al. 2017). On the
    LPC-EGEE trace, random folds took the walltime value's first-attempt success from
    0.9895 to 0.9656 against the users' requests' 0.9946; blocks give 0.9949.
    """
    if order is None:
        return np.random.default_rng(seed).permutation(np.arange(n) % folds)
    if len(order) != n:
        raise ValueError(f"order has {len(order)} rows, not {n}")
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(np.asarray(order), kind="stable")] = np.arange(n)
    return rank * folds // n


class LogValueModel:
    """``fit(X, values, eval_set=(X_val, values_val))`` → ``predict_dist(X)``."""

    def __init__(
        self,
        *,
        n_estimators: int = 2000,
        folds: int = 5,
        linear: bool = True,
        n_jobs: int | None = None,
        seed: int = 42,
    ):
        if n_estimators < 1:
            raise ValueError(f"{n_estimators=} must be positive")
        if folds < 2:
            raise ValueError(f"{folds=}: cross-fitting needs at least 2")
        self.n_estimators = n_estimators
        self.folds = folds
        self.linear = linear
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
        order: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> LogValueModel:
        """Locations cross-fitted on the fit and validation rows with a known value, the
        served one refitted on all of them (the ridge, then the trees on what it leaves);
        the scale on their out-of-fold residuals. ``order``: the fit and the validation
        rows' time order on a time-ordered history (folds in blocks of time,
        :func:`fold_of`); None: folds at random."""
        import xgboost as xgb

        values, val_values = np.asarray(values, float), np.asarray(eval_set[1], float)
        fit, val = _known(values), _known(val_values)
        if fit.sum() + val.sum() < 4:
            raise ValueError(
                f"value model: {fit.sum()} fit and {val.sum()} validation rows with a value; "
                "cross-fitting needs at least 4"
            )
        rows = EncodedFeatures.stack(
            [X.take(np.flatnonzero(fit)), eval_set[0].take(np.flatnonzero(val))]
        )
        matrix = tree_matrix(rows)
        logged = np.log1p(np.concatenate([values[fit], val_values[val]]))
        time = None if order is None else np.concatenate([order[0][fit], order[1][val]])
        out_of_fold, self.fold_rounds_ = self._cross_fit(rows, matrix, logged, time)
        self.linear_ = (
            LinearBase.fit(rows, logged, self.alpha_) if self.alpha_ is not None else None
        )
        self.location_ = xgb.train(
            self._params(LOCATION_PARAMS), xgb.DMatrix(matrix, logged - self._base(rows)),
            num_boost_round=max(round(float(np.mean(self.fold_rounds_))), 1),
        )  # fmt: skip
        log_abs = np.log(np.maximum(np.abs(logged - out_of_fold), 1e-6)) - _LOG_ABS_NORMAL
        self.scale_ = xgb.train(
            self._params(SCALE_PARAMS), xgb.DMatrix(matrix, log_abs), num_boost_round=SCALE_ROUNDS
        )
        self.trees_ = {}
        return self

    def _cross_fit(
        self,
        rows: EncodedFeatures,
        matrix: np.ndarray,
        logged: np.ndarray,
        order: np.ndarray | None = None,
    ) -> tuple[np.ndarray, list[int]]:
        """Every row's out-of-fold location and each fold's early-stopped number of trees
        (``alpha_``: the ridge's penalty, chosen on these folds); a small table gets fewer
        folds, two rows each at least."""
        import xgboost as xgb

        folds = min(self.folds, len(logged) // 2)
        fold = fold_of(len(logged), folds, self.seed, order)
        self.alpha_ = choose_alpha(rows, logged, fold) if self.linear else None
        out_of_fold, rounds = np.zeros(len(logged)), []
        for k in range(folds):
            inside, held = fold != k, fold == k
            target = logged.copy()
            if self.alpha_ is not None:
                base = LinearBase.fit(
                    rows.take(np.flatnonzero(inside)), logged[inside], self.alpha_
                )
                out_of_fold[held] = base.predict(rows.take(np.flatnonzero(held)))
                target -= base.predict(rows)
            booster = xgb.train(
                self._params(LOCATION_PARAMS), xgb.DMatrix(matrix[inside], target[inside]),
                num_boost_round=self.n_estimators,
                evals=[(xgb.DMatrix(matrix[held], target[held]), "held_out")],
                early_stopping_rounds=EARLY_STOPPING_ROUNDS, verbose_eval=False,
            )  # fmt: skip
            rounds.append(booster.best_iteration + 1)
            out_of_fold[held] += booster[: rounds[-1]].inplace_predict(matrix[held])
        return out_of_fold, rounds

    def _base(self, X: EncodedFeatures) -> np.ndarray | float:
        """The ridge's part of the location (0 for a model fitted or saved without it)."""
        linear = getattr(self, "linear_", None)
        return 0.0 if linear is None else linear.predict(X)

    def __getattr__(self, name: str) -> Any:
        """A booster of a model loaded from its trees, built when first asked for (from the
        file's bytes, read at load: the model stays the one loaded if the file changes)."""
        raw = self.__dict__.get("_raw", {}).get(name)
        if raw is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        booster = booster_from_bytes(raw)
        setattr(self, name, booster)
        return booster

    def _predict(self, name: str, matrix: np.ndarray) -> np.ndarray:
        """One booster's predictions: from its trees in numpy for a few rows, if it has them."""
        trees = self.trees_.get(name)
        if trees is not None and len(matrix) <= current().rows and trees.fits(1):  # as alone
            return trees.predict_value(matrix)
        booster = getattr(self, name)
        return np.asarray(booster.inplace_predict(matrix, validate_features=False))

    def predict_dist(self, X: EncodedFeatures) -> ValueDistribution:
        """The task's value as ``-1 + exp(N(mu, sigma))`` (value in the target's unit)."""
        check_fitted(self, "trees_")
        matrix = tree_matrix(X)
        mu = self._predict("location_", matrix).astype(float) + self._base(X)
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
        linear = getattr(self, "linear_", None)
        if linear is not None:
            linear.save(folder / "linear.npz")
            written.append("linear.npz")
        meta = {
            "n_estimators": self.n_estimators, "seed": self.seed, "folds": self.folds,
            "linear": self.linear,
        }  # fmt: skip
        (folder / "value.json").write_text(json.dumps(meta))
        return [*written, "value.json"]

    @classmethod
    def load(cls, folder: Path) -> LogValueModel:
        """A saved model; one written before cross-fitting (no ``folds``) or before the
        ridge (no ``linear.npz``: its trees alone) loads the same."""
        meta = json.loads((folder / "value.json").read_text())
        linear = folder / "linear.npz"
        model = cls(
            n_estimators=meta["n_estimators"], folds=meta.get("folds", 5),
            linear=linear.exists(), seed=meta["seed"],
        )  # fmt: skip
        model.linear_ = LinearBase.load(linear) if linear.exists() else None
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


class ValueModels:
    """Several targets' value models predicting the same rows together: the trees' matrix
    made once, the ridges in one pass (:class:`~.value_linear.JointLinear`); each target's
    distribution is the one its own :meth:`LogValueModel.predict_dist` gives."""

    def __init__(self, models: Mapping[str, LogValueModel]) -> None:
        self.models = dict(models)
        linear = {t: getattr(m, "linear_", None) for t, m in self.models.items()}
        self._ridged = [t for t, base in linear.items() if base is not None]
        try:
            self._joint = (
                JointLinear.of([linear[t] for t in self._ridged]) if self._ridged else None
            )
        except ValueError:  # ridges of different features: each predicts its own
            self._joint = None

    def predict_dists(self, X: EncodedFeatures) -> dict[str, ValueDistribution]:
        """Each target's :meth:`LogValueModel.predict_dist`: the same operations on each
        target's row of stacked arrays (the walks per booster, then one ``exp`` and one
        ``maximum`` for all), so a served request makes a handful of numpy calls, not a
        dozen per target."""
        models = list(self.models.values())
        for model in models:
            check_fitted(model, "trees_")
        matrix = tree_matrix(X)
        # np.array of the rows, not np.stack: no Python wrapper on every request
        location = np.array([m._predict("location_", matrix) for m in models], dtype=float)
        log_sigma = np.array([m._predict("scale_", matrix) for m in models], dtype=float)
        mu = location + self._bases(X, len(X))
        sigma = np.maximum(np.maximum(np.exp(log_sigma), _MIN_SIGMA), 1e-9)  # as .of clips
        offset = np.empty(mu.shape)
        offset.fill(-1.0)
        return {t: ValueDistribution(offset[i], mu[i], sigma[i]) for i, t in enumerate(self.models)}

    def _bases(self, X: EncodedFeatures, n: int) -> np.ndarray:
        """(targets, n) each model's ridge part (0 for a model without one, as its
        ``_base``)."""
        bases = np.zeros((len(self.models), n))
        if self._joint is not None:
            rows = [list(self.models).index(t) for t in self._ridged]
            bases[rows] = self._joint.predict(X)
        else:
            for i, model in enumerate(self.models.values()):
                bases[i] = model._base(X)
        return bases
