"""Decision policies: argmax, safe (tau for a recall, with a floor) and risk (conformal)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.allocation.policies import (
    PolicyError,
    RiskPolicy,
    SafePolicy,
    make_policy,
)


def _draw(n: int, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Calibrated probabilities: y is drawn from the stated distribution."""
    logits = rng.normal(0, 2, (n, k))
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=p) for p in proba])
    return proba, y


def test_safe_moves_up_only_when_the_upper_tail_is_likely():
    proba = np.array([[0.5, 0.2, 0.3], [0.6, 0.3, 0.1], [0.1, 0.5, 0.4]])
    chosen = SafePolicy(tau=0.3).choose(proba)
    # row 0: P(>=2)=0.3 -> class 2; row 1: P(>=1)=0.4 -> 1, P(>=2)=0.1 no; row 2: P(>=2)=0.4 -> 2
    assert chosen.tolist() == [2, 1, 2]
    assert SafePolicy(tau=0.99).choose(proba).tolist() == proba.argmax(axis=1).tolist()


def test_safe_fit_reaches_the_recall_and_respects_the_floor():
    rng = np.random.default_rng(0)
    proba, y = _draw(4000, 4, rng)
    policy = SafePolicy.fit(proba, y, target_recall=0.9)
    large = y >= 2
    assert (policy.choose(proba[large]) >= y[large]).mean() >= 0.9
    assert policy.tau > 0.1
    # an unreachable recall stops at the floor instead of moving everything up
    hopeless = np.tile([0.97, 0.01, 0.01, 0.01], (500, 1))
    labels = np.r_[np.zeros(490, int), np.full(10, 3)]
    assert SafePolicy.fit(hopeless, labels, target_recall=0.9, min_tau=0.2).tau == 0.2


@given(st.integers(0, 10_000), st.sampled_from([0.05, 0.1, 0.2]))
@settings(max_examples=15, deadline=None)
def test_risk_under_allocation_stays_below_alpha(seed, alpha):
    rng = np.random.default_rng(seed)
    cal_p, cal_y = _draw(1500, 4, rng)
    new_p, new_y = _draw(3000, 4, rng)
    policy = RiskPolicy.fit(cal_p, cal_y, alpha=alpha)
    under = (new_y > policy.choose(new_p)).mean()
    # conformal: <= alpha in expectation over calibration sets; one draw of 1,500 calibration
    # and 3,000 new rows scatters by this binomial sd, so 4 sd keep the test from flaking
    sd = np.sqrt(alpha * (1 - alpha) * (1 / len(cal_y) + 1 / len(new_y)))
    assert under <= alpha + 4 * sd


def test_risk_with_too_few_rows_allocates_the_largest_class():
    policy = RiskPolicy.fit(np.array([[0.9, 0.1]]), np.array([0]), alpha=0.05)
    assert policy.choose(np.array([[0.99, 0.01]])).tolist() == [1]


def test_make_policy_errors_are_clear():
    with pytest.raises(PolicyError, match="needs calibration"):
        make_policy("risk")
    with pytest.raises(PolicyError, match="unknown policy 'bold'"):
        make_policy("bold", np.ones((1, 2)) / 2, np.zeros(1, int))
    with pytest.raises(PolicyError, match="alpha"):
        make_policy("risk", np.ones((3, 2)) / 2, np.zeros(3, int), alpha=1.5)


def test_every_entry_point_names_the_same_policies():
    from scoutless.config import REPLAY_POLICIES, AllocationSettings
    from scoutless.policy_names import CLASS_POLICIES, POLICY_NAMES, VALUE_POLICIES
    from scoutless.service.schemas import PredictRequest

    assert POLICY_NAMES == CLASS_POLICIES + VALUE_POLICIES
    assert set(REPLAY_POLICIES) == set(POLICY_NAMES)
    field = AllocationSettings.model_json_schema()["properties"]["default_policy"]
    assert tuple(field["enum"]) == POLICY_NAMES
    request = PredictRequest.model_json_schema()["properties"]["policy"]["anyOf"][0]
    assert tuple(request["enum"]) == POLICY_NAMES
