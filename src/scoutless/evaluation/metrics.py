"""Classification metrics per target and over the whole pipeline (scikit-learn does the sums).

Every result is a plain JSON-ready dict, so ``metrics.json`` is written without converters:
non-finite numbers never appear (see :func:`scoutless.jsonsafe.json_number`): an open bin edge is the string
``"inf"`` (the same spelling :meth:`TargetBins.to_dict` uses, so the edges read back with
``TargetBins.from_dict``) and a figure that cannot be computed (no rows) is ``null``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score
from sklearn.metrics import precision_recall_fscore_support as prfs


def _check_pair(y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> None:
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true has shape {y_true.shape} but y_pred {y_pred.shape}")
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        if y.size and (y.min() < 0 or y.max() >= n_classes):
            raise ValueError(
                f"{name} holds classes outside 0..{n_classes - 1}: min={y.min()}, max={y.max()}"
            )


def classification_metrics(
    y_true: np.ndarray, y_pred: np.ndarray, labels: Sequence[str]
) -> dict[str, Any]:
    """Accuracy, macro/weighted F1, per-class precision/recall/F1/support, confusion matrix.

    Classes are the indices ``0..len(labels)-1``; a class absent from both arrays still gets
    its row (zeros), so matrices of different models line up. Confusion rows are true
    classes, columns predicted ones.
    """
    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    classes = list(range(len(labels)))
    _check_pair(y_true, y_pred, len(labels))
    if y_true.size == 0:
        return {
            "accuracy": None,
            "macro_f1": None,
            "weighted_f1": None,
            "per_class": [
                {"label": lab, "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
                for lab in labels
            ],
            "confusion": [[0] * len(labels) for _ in labels],
            "n": 0,
        }
    precision, recall, f1, support = prfs(y_true, y_pred, labels=classes, zero_division=0.0)
    return {
        "accuracy": float(accuracy_score(y_true, y_pred)),
        "macro_f1": float(
            f1_score(y_true, y_pred, labels=classes, average="macro", zero_division=0.0)
        ),
        "weighted_f1": float(
            f1_score(y_true, y_pred, labels=classes, average="weighted", zero_division=0.0)
        ),
        "per_class": [
            {
                "label": str(lab),
                "precision": float(p),
                "recall": float(r),
                "f1": float(f),
                "support": int(s),
            }
            for lab, p, r, f, s in zip(labels, precision, recall, f1, support, strict=True)
        ],
        "confusion": confusion_matrix(y_true, y_pred, labels=classes).astype(int).tolist(),
        "n": int(y_true.size),
    }


def pipeline_metrics(correct: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Over the targets at once: all right, at least k right (k = 1..n_targets), mean accuracy.

    ``correct[target]`` is a boolean array over the same rows for every target.
    """
    if not correct:
        raise ValueError("pipeline metrics need at least one target")
    lengths = {t: len(c) for t, c in correct.items()}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"pipeline targets cover different rows: {lengths}")
    hits = np.column_stack([np.asarray(c, dtype=bool) for c in correct.values()])
    n_right = hits.sum(axis=1)
    n_targets = hits.shape[1]
    if hits.shape[0] == 0:
        return {
            "exact_match": None,
            "at_least": {str(k): None for k in range(1, n_targets + 1)},
            "mean_accuracy": None,
            "n": 0,
            "targets": list(correct),
        }
    return {
        "exact_match": float((n_right == n_targets).mean()),
        "at_least": {str(k): float((n_right >= k).mean()) for k in range(1, n_targets + 1)},
        "mean_accuracy": float(hits.mean()),
        "n": int(hits.shape[0]),
        "targets": list(correct),
    }
