"""XGBoost baselines: label-encoded categoricals (as the paper did) and native categoricals.

Both train ``multi:softprob`` with class weights inverse to class frequency and early
stopping on the validation set; the booster is cut at its best iteration before saving,
so prediction is a single ``inplace_predict`` on a float32 matrix.

Missing numericals reach the trees as a sentinel below every standardised value, not as
NaN: a matrix with NaN is stored sparse by XGBoost's ``hist``, and partitioning rows on a
categorical split then binary-searches every row's bins, where a dense matrix indexes
them. A split
below the lowest real value still isolates the missing rows; what is lost is only the
learned default direction of splits elsewhere on that feature. Bundles saved before this
(no ``missing`` in their metadata) keep NaN.

A saved model keeps its trees in numpy too (``NAME.trees.npz``, checked against the booster
when saved): loading reads them, and XGBoost is imported only when the booster itself is
needed (a batch too large for the numpy walk, training on, a bundle saved without them).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scoutless.fast_paths import current
from scoutless.features.encoded import EncodedFeatures
from scoutless.models.base import check_fitted, check_labels
from scoutless.models.xgb_inference import TreeEnsemble, compile_booster

if TYPE_CHECKING:
    import xgboost as xgb

DEFAULT_PARAMS: dict[str, Any] = {
    "max_depth": 6,
    "learning_rate": 0.1,
    "min_child_weight": 1.0,
    "subsample": 0.8,
    "colsample_bytree": 0.8,
    "reg_lambda": 1.0,
    "max_bin": 256,
}

#: how missing numericals are given to the trees: ``"sentinel"`` (MISSING_SENTINEL) for
#: models fitted now, ``"nan"`` for bundles saved before the sentinel
MISSING_SENTINEL = np.float32(-1e9)


def tree_matrix(X: EncodedFeatures, *, sentinel: bool = True) -> np.ndarray:
    """float32 (n, codes + numericals): the matrix every booster of scoutless reads;
    missing numericals as :data:`MISSING_SENTINEL` (``sentinel``) or NaN.

    A few rows' (a served request's) is made once and kept on ``X``: its four classifiers
    and the value models read the same matrix, not one each; a larger batch's is
    made per call, so training does not hold a copy of its rows. Read only."""
    if len(X) > current().rows:
        return _tree_matrix(X, sentinel)
    return X.memo(("tree_matrix", sentinel), lambda: _tree_matrix(X, sentinel))


def _tree_matrix(X: EncodedFeatures, sentinel: bool) -> np.ndarray:
    matrix = np.empty((len(X), X.codes.shape[1] + X.numeric.shape[1]), dtype=np.float32)
    matrix[:, : X.codes.shape[1]] = X.codes
    numeric = matrix[:, X.codes.shape[1] :]
    numeric[:] = X.numeric
    if sentinel:
        numeric[np.isnan(numeric)] = MISSING_SENTINEL
    return matrix


def booster_params(
    base: dict[str, Any], *, seed: int, n_jobs: int | None, **objective: Any
) -> dict[str, Any]:
    """XGBoost parameters: ``base`` with the objective, the hist method, the seed, quiet,
    and ``nthread`` where ``n_jobs`` is given (every booster of the project is built here)."""
    params = {**base, **objective, "tree_method": "hist", "seed": seed, "verbosity": 0}
    if n_jobs:
        params["nthread"] = n_jobs
    return params


def booster_from_bytes(raw: bytes | bytearray) -> xgb.Booster:
    """A booster from a saved model's bytes, read at load (XGBoost imported only now: a
    loaded model predicts a few rows from its numpy trees without it)."""
    import xgboost as xgb

    booster = xgb.Booster()
    booster.load_model(raw)
    return booster


class XGBModel:
    """Shared fit/predict/save for both encodings of the categoricals (the two families below)."""

    name: ClassVar[str]
    native_categorical: ClassVar[bool]

    def __init__(
        self,
        *,
        n_classes: int,
        params: dict[str, Any] | None = None,
        n_estimators: int = 400,
        early_stopping_rounds: int = 20,
        n_jobs: int | None = None,
        seed: int = 42,
    ) -> None:
        if n_classes < 2:
            raise ValueError(f"{n_classes=} must be at least 2")
        if n_estimators < 1:
            raise ValueError(f"{n_estimators=} must be positive")
        self.n_classes = n_classes
        self.params = dict(params or {})
        self.n_estimators = n_estimators
        self.early_stopping_rounds = early_stopping_rounds
        self.n_jobs = n_jobs
        self.seed = seed
        self.missing = "sentinel"

    def _matrix(self, X: EncodedFeatures) -> np.ndarray:
        return tree_matrix(X, sentinel=self.missing == "sentinel")

    def _feature_types(self, X: EncodedFeatures) -> list[str] | None:
        if not self.native_categorical:
            return None
        return ["c"] * X.codes.shape[1] + ["q"] * X.numeric.shape[1]

    def _booster_params(self) -> dict[str, Any]:
        return booster_params(
            {**DEFAULT_PARAMS, **self.params}, seed=self.seed, n_jobs=self.n_jobs,
            objective="multi:softprob", num_class=self.n_classes, eval_metric="mlogloss",
        )  # fmt: skip

    def fit(
        self,
        X: EncodedFeatures,
        y: np.ndarray,
        *,
        eval_set: tuple[EncodedFeatures, np.ndarray],
        class_weight: np.ndarray | None = None,
        values: np.ndarray | None = None,  # unused: trees fit the classes only
    ) -> XGBModel:
        import xgboost as xgb

        X_val = eval_set[0]
        y, y_val, weight, val_weight = self._labels_and_weights(y, eval_set[1], class_weight)
        params = self._booster_params()
        # the booster refuses a training matrix binned otherwise than its max_bin
        dtrain = self._dmatrix(X, y, weight, xgb.QuantileDMatrix, max_bin=params["max_bin"])
        evals = []  # none: a refit of a known number of trees (:meth:`for_refit`)
        if len(y_val):
            evals = [(self._dmatrix(X_val, y_val, val_weight, xgb.DMatrix), "validation")]
        booster = xgb.train(
            params,
            dtrain,
            num_boost_round=self.n_estimators,
            evals=evals,
            early_stopping_rounds=self.early_stopping_rounds if evals else None,
            verbose_eval=False,
        )
        return self._keep_best(booster)

    def _dmatrix(
        self,
        X: EncodedFeatures,
        y: np.ndarray,
        weight: np.ndarray | None,
        kind: Any,
        **binning: Any,
    ) -> xgb.DMatrix:
        """``kind`` (DMatrix or QuantileDMatrix) of ``X`` with its labels and row weights."""
        return kind(
            self._matrix(X),
            label=y,
            weight=weight,
            feature_types=self._feature_types(X),
            enable_categorical=self.native_categorical,
            **binning,
        )

    def for_refit(self, n_rows: int, n_fit_rows: int) -> XGBModel:
        """An unfitted copy that grows this fit's early-stopped number of trees scaled by
        ``n_rows / n_fit_rows``, to be fitted on ``n_rows`` rows without early stopping.

        Why: on a time split the model is fitted on the earliest rows and stopped on the
        latest; refitted on the fit and validation rows (``FamilyTrainer.refit``), the
        served model learns from the most recent jobs too (on LPC-EGEE the held-out fit
        lost to its own input last-2 by 0.02-0.04 macro-F1; the refit is above it)."""
        check_fitted(self, "classes_")
        if n_rows < 1 or n_fit_rows < 1:
            raise ValueError(f"{n_rows=} and {n_fit_rows=} must be positive")
        trees = max(1, round((self.best_iteration_ + 1) * n_rows / n_fit_rows))
        return type(self)(
            n_classes=self.n_classes, params=self.params, n_estimators=trees,
            early_stopping_rounds=self.early_stopping_rounds, n_jobs=self.n_jobs, seed=self.seed,
        )  # fmt: skip

    def _labels_and_weights(
        self, y: np.ndarray, y_val: np.ndarray, class_weight: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Checked fit and validation labels with their rows' class weights (also used by
        the Dask fit, :mod:`scoutless.distributed.xgb`)."""
        y = check_labels(y, self.n_classes, f"{self.name}.fit")
        y_val = check_labels(y_val, self.n_classes, f"{self.name}.fit eval_set")
        if class_weight is None:
            return y, y_val, None, None
        return y, y_val, class_weight[y], class_weight[y_val]

    def _keep_best(self, booster: xgb.Booster) -> XGBModel:
        """The booster cut at its best (early-stopping) iteration becomes the fitted model."""
        best = getattr(booster, "best_iteration", None)
        self.best_iteration_ = int(best) if best is not None else self.n_estimators - 1
        self._set_booster(booster[: self.best_iteration_ + 1])
        return self

    def _set_booster(self, booster: xgb.Booster) -> None:
        """Keep a one-thread copy for small batches: OpenMP threads only add latency there,
        and far more under CPU contention, when they wait for cores others hold; and the
        trees in numpy for a few rows, where ``inplace_predict``'s fixed cost per call
        dominates (:mod:`scoutless.models.xgb_inference`)."""
        self.booster_ = booster
        self._booster_small = booster.copy()
        self._booster_small.set_param({"nthread": 1})
        self.__dict__.pop("tree_ensemble", None)  # compiled again from this booster
        self.classes_ = np.arange(self.n_classes)

    def __getattr__(self, name: str) -> Any:
        """The booster of a model loaded from its trees, built when first asked for (from
        the file's bytes, read at load: the model stays the one loaded if the file changes)."""
        raw = self.__dict__.get("_booster_raw")
        if name not in ("booster_", "_booster_small") or raw is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        booster = booster_from_bytes(raw)
        trees = self.__dict__.get("tree_ensemble")
        self._set_booster(booster)
        if trees is not None:  # the saved ensemble, checked against this booster at save
            self.__dict__["tree_ensemble"] = trees
        return self.__dict__[name]

    @functools.cached_property
    def tree_ensemble(self) -> TreeEnsemble | None:
        """The trees in numpy (None: left to ``inplace_predict``), compiled on first use:
        a fit in a search never needs them, a loaded (served) model compiles them at load."""
        return compile_booster(self._booster_small)

    def predict_proba(self, X: EncodedFeatures) -> np.ndarray:
        check_fitted(self, "classes_")
        matrix = self._matrix(X)
        if len(X) <= current().rows:
            trees = self.tree_ensemble
            # the model's size decides, not the rows': a task grouped with others (the
            # service's micro-batches) gets the probabilities it gets alone, to the bit
            if trees is not None and trees.fits(1):
                return trees.predict_proba(matrix)
        booster = self._booster_small if len(X) <= current().rows else self.booster_
        proba = booster.inplace_predict(matrix, validate_features=False)
        return np.asarray(proba, dtype=np.float64).reshape(len(X), self.n_classes)

    def hyperparameters(self) -> dict[str, Any]:
        return {
            **DEFAULT_PARAMS,
            **self.params,
            "n_estimators": self.n_estimators,
            "early_stopping_rounds": self.early_stopping_rounds,
            "best_iteration": getattr(self, "best_iteration_", None),
            "native_categorical": self.native_categorical,
            "missing": self.missing,
        }

    def save(self, folder: Path) -> list[str]:
        check_fitted(self, "classes_")
        folder.mkdir(parents=True, exist_ok=True)
        self.booster_.save_model(folder / f"{self.name}.ubj")
        written = [f"{self.name}.ubj", f"{self.name}.json"]
        if self.tree_ensemble is not None:
            self.tree_ensemble.save(folder / f"{self.name}.trees.npz")
            written.append(f"{self.name}.trees.npz")
        meta = {
            "n_classes": self.n_classes,
            "params": self.params,
            "n_estimators": self.n_estimators,
            "early_stopping_rounds": self.early_stopping_rounds,
            "seed": self.seed,
            "best_iteration": self.best_iteration_,
            "missing": self.missing,
        }
        (folder / f"{self.name}.json").write_text(json.dumps(meta, indent=1))
        return written

    @classmethod
    def load(cls, folder: Path) -> XGBModel:
        meta = json.loads((folder / f"{cls.name}.json").read_text())
        model = cls(
            n_classes=meta["n_classes"],
            params=meta["params"],
            n_estimators=meta["n_estimators"],
            early_stopping_rounds=meta["early_stopping_rounds"],
            seed=meta["seed"],
        )
        model.missing = meta.get("missing", "nan")
        model.best_iteration_ = meta["best_iteration"]
        model._booster_raw = bytearray((folder / f"{cls.name}.ubj").read_bytes())
        trees = folder / f"{cls.name}.trees.npz"
        if trees.exists():  # the booster is read on first need (see __getattr__)
            model.tree_ensemble = TreeEnsemble.load(trees)
            model.classes_ = np.arange(model.n_classes)
        else:  # saved without its trees: compiled now, not on the first served request
            _ = model.tree_ensemble
        return model


class XGBLabelModel(XGBModel):
    """Categoricals as their vocabulary index, split on like numbers (the paper's baseline)."""

    name: ClassVar[str] = "xgb"
    native_categorical: ClassVar[bool] = False


class XGBNativeModel(XGBModel):
    """Categoricals as XGBoost categorical features (partition splits): the stronger baseline."""

    name: ClassVar[str] = "xgb_native"
    native_categorical: ClassVar[bool] = True
