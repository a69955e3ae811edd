"""Drift between the training reference and what the service sees now.

- population stability index (PSI) per feature: quantile buckets of the reference for
  numericals (missing values get their own bucket), the reference's vocabulary plus an
  "unseen" bucket for categoricals. Rule of thumb: < 0.1 stable, 0.1–0.2 moderate, > 0.2 shift.
- two-sample Kolmogorov–Smirnov test for numericals (scipy).
- class-prior drift: PSI and total variation distance between class frequencies.

Pure functions on frames and arrays; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from scoutless.features.spec import FeatureSpec

EPSILON = 1e-4  # floor on bucket shares: an empty bucket must not give an infinite PSI
MISSING = "<missing>"
UNSEEN = "<unseen>"


def psi_from_counts(reference: np.ndarray, current: np.ndarray) -> float:
    """PSI = Σ (cur − ref) · ln(cur / ref) over bucket shares (floored at EPSILON)."""
    ref = np.asarray(reference, dtype=float)
    cur = np.asarray(current, dtype=float)
    if ref.shape != cur.shape:
        raise ValueError(f"bucket counts differ in shape: {ref.shape} vs {cur.shape}")
    if ref.sum() <= 0 or cur.sum() <= 0:
        return float("nan")
    p = np.maximum(ref / ref.sum(), EPSILON)
    q = np.maximum(cur / cur.sum(), EPSILON)
    return float(np.sum((q - p) * np.log(q / p)))


def numeric_buckets(reference: np.ndarray, n_buckets: int = 10) -> np.ndarray:
    """Inner edges: the reference's quantiles, ties merged."""
    ref = np.asarray(reference, dtype=float)
    ref = ref[np.isfinite(ref)]
    if ref.size == 0:
        return np.array([])
    return np.unique(np.quantile(ref, np.linspace(0, 1, n_buckets + 1)[1:-1]))


def _numeric_counts(values: np.ndarray, inner: np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    finite = np.isfinite(v)
    counts = np.bincount(np.searchsorted(inner, v[finite], side="right"), minlength=inner.size + 1)
    return np.append(counts, (~finite).sum())


def psi_numeric(reference: np.ndarray, current: np.ndarray, n_buckets: int = 10) -> float:
    inner = numeric_buckets(reference, n_buckets)
    return psi_from_counts(_numeric_counts(reference, inner), _numeric_counts(current, inner))


def _as_categories(values: Sequence[object] | pd.Series) -> pd.Series:
    series = pd.Series(values, dtype=object)
    return series.where(series.notna(), MISSING).astype(str)


def psi_categorical(reference: Sequence[object], current: Sequence[object]) -> float:
    ref = _as_categories(reference)
    cur = _as_categories(current)
    vocabulary = [*sorted(ref.unique()), UNSEEN]
    cur = cur.where(cur.isin(vocabulary[:-1]), UNSEEN)
    ref_counts = ref.value_counts().reindex(vocabulary, fill_value=0).to_numpy()
    cur_counts = cur.value_counts().reindex(vocabulary, fill_value=0).to_numpy()
    return psi_from_counts(ref_counts, cur_counts)


def ks_test(reference: np.ndarray, current: np.ndarray) -> tuple[float, float]:
    """(statistic, p-value) on finite values; NaNs when either side has none."""
    ref = np.asarray(reference, dtype=float)
    cur = np.asarray(current, dtype=float)
    ref, cur = ref[np.isfinite(ref)], cur[np.isfinite(cur)]
    if ref.size == 0 or cur.size == 0:
        return float("nan"), float("nan")
    result = stats.ks_2samp(ref, cur)
    return float(result.statistic), float(result.pvalue)


@dataclass(frozen=True)
class FeatureDrift:
    feature: str
    kind: str
    psi: float
    ks_stat: float
    ks_pvalue: float
    n_reference: int
    n_current: int


def feature_drift(
    reference: pd.DataFrame, current: pd.DataFrame, specs: Sequence[FeatureSpec]
) -> pd.DataFrame:
    """One row per feature present in both frames: PSI, KS (numericals), sample sizes."""
    rows = []
    for spec in specs:
        if spec.name not in reference.columns or spec.name not in current.columns:
            continue
        ref, cur = reference[spec.name], current[spec.name]
        if spec.kind == "numerical":
            ref_v = pd.to_numeric(ref, errors="coerce").to_numpy(dtype=float)
            cur_v = pd.to_numeric(cur, errors="coerce").to_numpy(dtype=float)
            psi = psi_numeric(ref_v, cur_v)
            ks_stat, ks_p = ks_test(ref_v, cur_v)
        else:
            psi = psi_categorical(ref, cur)
            ks_stat = ks_p = float("nan")
        rows.append(FeatureDrift(spec.name, spec.kind, psi, ks_stat, ks_p, len(ref), len(cur)))
    return pd.DataFrame([r.__dict__ for r in rows], columns=list(FeatureDrift.__annotations__))


def class_shares(classes: np.ndarray, n_classes: int) -> np.ndarray:
    """Counts of each class 0..n_classes-1 (negative ids = unknown, ignored)."""
    c = np.asarray(classes, dtype=np.int64)
    c = c[(c >= 0) & (c < n_classes)]
    return np.bincount(c, minlength=n_classes)


def prior_drift(
    reference_classes: np.ndarray, current_classes: np.ndarray, n_classes: int
) -> tuple[float, float]:
    """(PSI, total variation distance) between two class distributions."""
    ref = class_shares(reference_classes, n_classes)
    cur = class_shares(current_classes, n_classes)
    if ref.sum() == 0 or cur.sum() == 0:
        return float("nan"), float("nan")
    tvd = 0.5 * float(np.abs(ref / ref.sum() - cur / cur.sum()).sum())
    return psi_from_counts(ref, cur), tvd
