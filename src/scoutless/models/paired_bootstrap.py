"""How sure are we that one classifier beats another? A paired, time-blocked bootstrap.

The guard (:mod:`scoutless.models.guard`) must not trade a baseline for a rule whose lead
on validation is luck: it picks among dozens of rules (winner's curse), and validation
rows come in bursts (a user's jobs arrive together, so rows are not independent). Resampling
whole contiguous time blocks keeps the bursts together, and scoring both classifiers on the
same resample keeps the comparison paired. Scores come from summed per-block confusion
matrices, so a thousand resamples of a few thousand rows take milliseconds.
"""

from __future__ import annotations

import numpy as np


def block_confusions(
    y: np.ndarray, predicted: np.ndarray, blocks: np.ndarray, n_classes: int
) -> np.ndarray:
    """(n_blocks, K, K) confusion matrices (true class on rows) per block number."""
    n_blocks = int(blocks.max()) + 1 if len(blocks) else 0
    flat = (blocks * n_classes + y) * n_classes + predicted
    counts = np.bincount(flat, minlength=n_blocks * n_classes * n_classes)
    return counts.reshape(n_blocks, n_classes, n_classes)


def macro_f1_accuracy(confusion: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Macro-F1 and accuracy of (..., K, K) confusion matrices.

    Macro-F1 averages over the classes that occur as truth or prediction (scikit-learn's
    ``f1_score(average="macro", zero_division=0)``).
    """
    hits = np.diagonal(confusion, axis1=-2, axis2=-1)
    occurs = confusion.sum(axis=-1) + confusion.sum(axis=-2)
    f1 = 2 * hits / np.maximum(occurs, 1)
    n_present = np.maximum((occurs > 0).sum(axis=-1), 1)
    accuracy = hits.sum(axis=-1) / np.maximum(confusion.sum(axis=(-2, -1)), 1)
    return f1.sum(axis=-1) / n_present, accuracy


def time_blocks(order: np.ndarray, n_blocks: int) -> np.ndarray:
    """Block number per row: ``n_blocks`` contiguous, near-equal runs of ``order``."""
    rank = np.argsort(np.argsort(order, kind="stable"), kind="stable")
    n = max(len(order), 1)
    return (rank * min(n_blocks, n) // n).astype(np.int64)


def resampled_f1_accuracy(
    y: np.ndarray,
    predictions: list[np.ndarray],
    order: np.ndarray,
    n_classes: int,
    *,
    n_blocks: int,
    n_resamples: int,
    seed: int = 0,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per prediction, (macro-F1, accuracy) on each of ``n_resamples`` block-bootstrap
    resamples of the rows; all predictions share the resamples (a paired comparison)."""
    blocks = time_blocks(order, n_blocks)
    n_found = int(blocks.max()) + 1 if len(blocks) else 1
    draws = np.random.default_rng(seed).integers(0, n_found, (n_resamples, n_found))
    return [
        macro_f1_accuracy(block_confusions(y, predicted, blocks, n_classes)[draws].sum(axis=1))
        for predicted in predictions
    ]


def margin_lower_bounds(
    y: np.ndarray,
    candidates: list[np.ndarray],
    reference: np.ndarray,
    order: np.ndarray,
    n_classes: int,
    *,
    quantile: float,
    n_blocks: int,
    n_resamples: int,
    seed: int = 0,
) -> np.ndarray:
    """Per candidate, the ``quantile`` of min(Δ macro-F1, Δ accuracy) over the reference,
    over block-bootstrap resamples of the rows (all candidates share the resamples)."""
    (ref_f1, ref_acc), *scored = resampled_f1_accuracy(
        y, [reference, *candidates], order, n_classes,
        n_blocks=n_blocks, n_resamples=n_resamples, seed=seed,
    )  # fmt: skip
    return np.array(
        [np.quantile(np.minimum(f1 - ref_f1, acc - ref_acc), quantile) for f1, acc in scored]
    )
