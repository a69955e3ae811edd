"""What a decision policy costs a scheduler: under-allocation, over-allocation, accuracy.

A chosen class is allocated its upper bin edge (for an open last class: the bins'
``recommended`` value). Under-allocation: the true class lies above the chosen one (the job
would be killed or throttled). Over-allocation: allocated ÷ true task value, in target units,
over every row with a positive finite true value (under-allocated rows give ratios below 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from scoutless.allocation.policies import RiskPolicy, SafePolicy, large_class_start, make_policy
from scoutless.policy_names import CLASS_POLICIES
from scoutless.targets.bins import TargetBins

DEFAULT_ALPHAS: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3)
DEFAULT_TAUS: tuple[float, ...] = tuple(float(t) for t in np.round(np.linspace(0.05, 0.5, 10), 3))


def allocated_values(bins: TargetBins) -> np.ndarray:
    """Value allocated per class: its upper edge, or ``recommended`` when the edge is open."""
    upper = np.asarray(bins.edges[1:], dtype=float)
    return np.where(np.isfinite(upper), upper, np.asarray(bins.recommended, dtype=float))


def allocation_metrics(
    chosen: np.ndarray, y_true: np.ndarray, true_values: np.ndarray, bins: TargetBins
) -> dict[str, Any]:
    """Accuracy, under-allocation rate and over-allocation median/P90 of chosen classes."""
    chosen = np.asarray(chosen, dtype=np.int64)
    y_true = np.asarray(y_true, dtype=np.int64)
    values = np.asarray(true_values, dtype=float)
    if not chosen.shape == y_true.shape == values.shape:
        raise ValueError(
            f"chosen {chosen.shape}, y_true {y_true.shape} and values {values.shape} differ"
        )
    if chosen.size == 0:
        return {
            "accuracy": None,
            "under_allocation_rate": None,
            "over_allocation_median": None,
            "over_allocation_p90": None,
        }
    ratio = allocated_values(bins)[chosen] / values
    ratio = ratio[np.isfinite(ratio) & (values > 0)]
    return {
        "accuracy": float((chosen == y_true).mean()),
        "under_allocation_rate": float((y_true > chosen).mean()),
        "over_allocation_median": float(np.median(ratio)) if ratio.size else None,
        "over_allocation_p90": float(np.quantile(ratio, 0.9)) if ratio.size else None,
    }


def evaluate_policies(
    proba: np.ndarray,
    y_true: np.ndarray,
    true_values: np.ndarray,
    bins: TargetBins,
    cal_proba: np.ndarray,
    cal_y: np.ndarray,
    *,
    model: str,
    alpha: float = 0.05,
    recall: float = 0.9,
) -> dict[str, dict[str, Any]]:
    """argmax, safe (fitted for ``recall``) and risk (fitted for ``alpha``) on the test rows."""
    out: dict[str, dict[str, Any]] = {}
    for name in CLASS_POLICIES:
        policy = make_policy(name, cal_proba, cal_y, alpha=alpha, recall=recall)
        entry = {"model": model, "alpha": None, "tau": None}
        if isinstance(policy, SafePolicy):
            large = y_true >= large_class_start(proba.shape[1])
            achieved = (
                float((policy.choose(proba[large]) >= y_true[large]).mean())
                if large.any()
                else None
            )
            entry |= {"tau": policy.tau, "target_recall": recall, "large_class_recall": achieved}
        if isinstance(policy, RiskPolicy):
            threshold = policy.threshold if math.isfinite(policy.threshold) else None
            entry |= {"alpha": alpha, "threshold": threshold}
        out[name] = entry | allocation_metrics(policy.choose(proba), y_true, true_values, bins)
    return out


def tradeoff_curves(
    proba: np.ndarray,
    y_true: np.ndarray,
    cal_proba: np.ndarray,
    cal_y: np.ndarray,
    *,
    alphas: Sequence[float] = DEFAULT_ALPHAS,
    taus: Sequence[float] = DEFAULT_TAUS,
) -> dict[str, dict[str, list[float]]]:
    """Under-allocation and accuracy on test vs the risk policy's α and the safe policy's τ."""
    y_true = np.asarray(y_true, dtype=np.int64)

    def rates(chosen: np.ndarray) -> tuple[float, float]:
        if y_true.size == 0:
            return math.nan, math.nan
        return float((y_true > chosen).mean()), float((chosen == y_true).mean())

    alpha_rows = [rates(RiskPolicy.fit(cal_proba, cal_y, a).choose(proba)) for a in alphas]
    tau_rows = [rates(SafePolicy(tau=float(t)).choose(proba)) for t in taus]
    return {
        "alpha": {
            "values": [float(a) for a in alphas],
            "under_allocation": [u for u, _ in alpha_rows],
            "accuracy": [a for _, a in alpha_rows],
        },
        "tau": {
            "values": [float(t) for t in taus],
            "under_allocation": [u for u, _ in tau_rows],
            "accuracy": [a for _, a in tau_rows],
        },
    }
