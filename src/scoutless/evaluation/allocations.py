"""How just-enough the value allocation is on the test tasks, per target.

For the (1 - alpha) value (``policy=value``) and, for comparison, the risk policy's class
value: the share of tasks under-allocated (need > value) and the median of allocated ÷
needed. On a synthetic table, the same figures for the Bayes-optimal value quantile (the
generator's true (1 - alpha) quantile of each task's value): the best any submission-time
predictor can allocate at that alpha, and the ratio of the two medians; and the true
quantile at the level that under-allocates exactly alpha of the test tasks (the fair bound
where the generator's distribution is calibrated rather than exact).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from scoutless.allocation.allocate import value_allocation
from scoutless.allocation.policies import RiskPolicy
from scoutless.allocation.values import ValueDistribution
from scoutless.models.predictor import PredictorLike
from scoutless.targets.spec import TRUTH_PARTS, truth_col, value_col


def _figures(allocated: np.ndarray, need: np.ndarray) -> dict[str, float]:
    return {
        "under_allocation": float((need > allocated).mean()),
        "median_ratio": float(np.median(allocated / need)),
    }


def true_distribution(test: pd.DataFrame, target: str) -> ValueDistribution | None:
    """Each task's true value distribution, from a synthetic table's truth columns (None
    where the table has none)."""
    columns = [truth_col(target, part) for part in TRUTH_PARTS]
    if not all(c in test.columns for c in columns):
        return None
    mu, sigma, offset = (test[c].to_numpy(dtype=float) for c in columns)
    return ValueDistribution.of(offset, mu, sigma)


def bayes_at_under(truth: ValueDistribution, need: np.ndarray, under: float) -> np.ndarray:
    """The true quantile of each task's value at the one level that under-allocates
    ``under`` of these tasks' needs."""
    z = float(np.quantile(truth.z_scores(need), 1 - under))
    return truth.at_z(z)


def _bayes_values(
    test: pd.DataFrame, target: str, need: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """The true (1 - alpha) quantile of each task's value, and the true quantile at the
    level that under-allocates exactly alpha of these tasks (where the generator's
    distribution is calibrated rather than exact, e.g. cputime, the two differ)."""
    truth = true_distribution(test, target)
    if truth is None:
        return None
    return truth.quantile(1 - alpha), bayes_at_under(truth, need, alpha)


def allocation_figures(
    predictor: PredictorLike,
    target: str,
    test: pd.DataFrame,
    class_proba: np.ndarray,
    alpha: float,
) -> dict[str, Any] | None:
    """The target's allocation figures on ``test`` (None: the bundle has no value model)."""
    if not predictor.has_values(target):
        return None
    need = test[value_col(target)].to_numpy(dtype=float)
    known = np.isfinite(need) & (need > 0)
    rows = test[[f.name for f in predictor.feature_specs]]
    dist = predictor.value_distribution(rows, target)
    value = value_allocation(dist, predictor.value_levels(target), alpha).value
    risk = RiskPolicy.fit(*predictor.calibration(target), alpha=alpha).choose(class_proba)
    risk_value = np.asarray(predictor.bins[target].recommended, dtype=float)[risk]
    out: dict[str, Any] = {
        "alpha": alpha,
        "rows": int(known.sum()),
        "value": _figures(value[known], need[known]),
        "risk_class": _figures(risk_value[known], need[known]),
    }
    bayes = _bayes_values(test[known], target, need[known], alpha)
    if bayes is not None:
        out["bayes_value"] = _figures(bayes[0], need[known])
        out["bayes_value_same_under"] = _figures(bayes[1], need[known])
        median = out["value"]["median_ratio"]
        out["ratio_to_bayes"] = median / out["bayes_value"]["median_ratio"]
        out["ratio_to_bayes_same_under"] = median / out["bayes_value_same_under"]["median_ratio"]
    return out
