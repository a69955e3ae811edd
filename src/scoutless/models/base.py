"""The contract every per-target classifier follows, and the helpers they share.

A model sees only :class:`~scoutless.features.encoded.EncodedFeatures` (never pandas or
a database) and predicts ordinal classes ``0 .. n_classes - 1``; ``predict_proba``
columns follow ``classes_ = arange(n_classes)`` even when a class was absent in training.
As in scikit-learn, ``classes_`` and the other trailing-underscore attributes exist only
once the model is fitted (or loaded); predicting or saving before raises
:class:`NotFittedError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from scoutless.features.encoded import EncodedFeatures


@runtime_checkable
class ClassModel(Protocol):
    name: ClassVar[str]
    n_classes: int
    classes_: np.ndarray

    def fit(
        self,
        X: EncodedFeatures,
        y: np.ndarray,
        *,
        eval_set: tuple[EncodedFeatures, np.ndarray],
        class_weight: np.ndarray | None = None,
        values: np.ndarray | None = None,
    ) -> ClassModel:
        """Fit on ``X``; ``eval_set`` drives early stopping; ``values`` are the rows' continuous
        target values, which a model may use as an auxiliary signal. Returns self."""
        ...

    def predict_proba(self, X: EncodedFeatures) -> np.ndarray:
        """(n, n_classes) probabilities, rows summing to 1."""
        ...

    def hyperparameters(self) -> dict[str, Any]:
        """JSON-ready settings the model was trained with (for the manifest)."""
        ...

    def save(self, folder: Path) -> list[str]:
        """Write the fitted model into ``folder``; the file names written."""
        ...

    @classmethod
    def load(cls, folder: Path) -> ClassModel: ...


def check_fitted(model: object, attribute: str) -> None:
    """Raise :class:`NotFittedError` naming the model unless ``attribute`` was set by fit/load."""
    if getattr(model, attribute, None) is None:
        # scikit-learn's own error (callers catch it), imported only when raised: loading a
        # bundle and predicting import no scikit-learn
        from sklearn.exceptions import NotFittedError

        name = getattr(model, "name", type(model).__name__)
        raise NotFittedError(f"{name}: not fitted yet; call fit() or load() before using it")


def check_labels(y: np.ndarray, n_classes: int, where: str) -> np.ndarray:
    """Labels as int64 in [0, n_classes); raise naming ``where`` otherwise."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{where}: labels must be 1-D, got shape {y.shape}")
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        raise ValueError(
            f"{where}: labels must lie in [0, {n_classes}), got [{y.min()}, {y.max()}]"
        )
    return y.astype(np.int64)


def balanced_class_weight(y: np.ndarray, n_classes: int) -> np.ndarray:
    """Weight per class inverse to its frequency, n / (K_present · n_c); 0 for absent classes."""
    counts = np.bincount(np.asarray(y, dtype=np.int64), minlength=n_classes).astype(float)
    present = counts > 0
    weights = np.zeros(n_classes)
    weights[present] = counts.sum() / (present.sum() * counts[present])
    return weights
