"""Policy costs, and the promises of the risk and safe policies on exchangeable data."""

import itertools
import math

import numpy as np
import pytest

from scoutless.allocation.policies import RiskPolicy, SafePolicy
from scoutless.evaluation.policies_eval import (
    allocated_values,
    allocation_metrics,
    evaluate_policies,
    tradeoff_curves,
)
from scoutless.targets.bins import TargetBins

BINS = TargetBins("memory", "MB/core", (0, 1000, 2000, 4000, math.inf), ("a", "b", "c", "d"),
                  recommended=(1000, 2000, 4000, 6000))  # fmt: skip


def test_allocation_uses_upper_edge_and_recommended_for_open_class():
    assert allocated_values(BINS).tolist() == [1000, 2000, 4000, 6000]


def test_allocation_metrics_by_hand():
    chosen = np.array([0, 1, 3, 1])
    y_true = np.array([0, 2, 3, 0])
    values = np.array([500.0, 2500.0, 5000.0, 250.0])
    m = allocation_metrics(chosen, y_true, values, BINS)
    assert m["accuracy"] == 0.5
    assert m["under_allocation_rate"] == 0.25
    ratios = [2.0, 0.8, 1.2, 8.0]
    assert m["over_allocation_median"] == pytest.approx(np.median(ratios))
    assert m["over_allocation_p90"] == pytest.approx(np.quantile(ratios, 0.9))


def _draw(n: int, k: int, rng: np.random.Generator, sharpness: float):
    """Model probabilities, and true classes drawn from a (maybe different) truth."""
    centre = rng.uniform(0, k - 1, n)
    logits = -((np.arange(k)[None, :] - centre[:, None]) ** 2)
    proba = np.exp(logits * 2.0)
    proba /= proba.sum(axis=1, keepdims=True)
    truth = np.exp(logits * 2.0 * sharpness)
    truth /= truth.sum(axis=1, keepdims=True)
    y = (truth.cumsum(axis=1) < rng.random(n)[:, None]).sum(axis=1)
    return proba, np.minimum(y, k - 1)


@pytest.mark.parametrize("sharpness", [1.0, 0.4], ids=["calibrated", "overconfident"])
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_risk_policy_keeps_under_allocation_below_alpha(sharpness, alpha):
    """The guarantee is marginal over calibration sets: average over ten of them."""
    under, below_top = [], []
    for seed in range(10):
        rng = np.random.default_rng(seed)
        cal_proba, cal_y = _draw(1500, 5, rng, sharpness)
        proba, y = _draw(5000, 5, rng, sharpness)
        chosen = RiskPolicy.fit(cal_proba, cal_y, alpha).choose(proba)
        under.append((y > chosen).mean())
        below_top.append((chosen < 4).mean())
    assert np.mean(under) <= alpha + 0.01
    assert max(under) <= alpha + 0.04
    # not bought by always allocating the largest class
    assert np.mean(below_top) > 0.5
    assert np.mean(under) > alpha / 2


def test_safe_policy_reaches_its_recall_of_the_large_classes():
    rng = np.random.default_rng(7)
    cal_proba, cal_y = _draw(3000, 4, rng, 0.5)
    proba, y = _draw(20000, 4, rng, 0.5)
    policy = SafePolicy.fit(cal_proba, cal_y, target_recall=0.9)
    large = y >= 2
    recall = (policy.choose(proba[large]) >= y[large]).mean()
    assert recall >= 0.9 - 0.03
    assert recall > (proba[large].argmax(axis=1) >= y[large]).mean()  # it moved rows up


def test_evaluate_policies_reports_each_policy():
    rng = np.random.default_rng(1)
    cal_proba, cal_y = _draw(500, 4, rng, 1.0)
    proba, y = _draw(800, 4, rng, 1.0)
    values = np.asarray((*BINS.edges[1:-1], 5000.0))[y] * 0.9
    out = evaluate_policies(proba, y, values, BINS, cal_proba, cal_y, model="xgb", alpha=0.1)
    assert set(out) == {"argmax", "safe", "risk"}
    assert out["risk"]["alpha"] == 0.1 and out["risk"]["tau"] is None
    assert out["safe"]["tau"] is not None and out["safe"]["alpha"] is None
    large = y >= 2
    safe_choice = SafePolicy(tau=out["safe"]["tau"]).choose(proba[large])
    assert out["safe"]["large_class_recall"] == pytest.approx((safe_choice >= y[large]).mean())
    assert out["argmax"]["accuracy"] == pytest.approx((proba.argmax(axis=1) == y).mean())
    # moving up never under-allocates more than argmax
    assert out["safe"]["under_allocation_rate"] <= out["argmax"]["under_allocation_rate"]


def test_tradeoff_curves_are_monotone():
    rng = np.random.default_rng(3)
    cal_proba, cal_y = _draw(1000, 4, rng, 0.7)
    proba, y = _draw(3000, 4, rng, 0.7)
    curves = tradeoff_curves(proba, y, cal_proba, cal_y)
    under_alpha = curves["alpha"]["under_allocation"]
    assert curves["alpha"]["values"] == sorted(curves["alpha"]["values"])
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(under_alpha))
    under_tau = curves["tau"]["under_allocation"]
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(under_tau))
    assert under_alpha[0] < under_alpha[-1]
