from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scoutless.features.spec import FeatureSpec
from scoutless.ops.drift import (
    feature_drift,
    ks_test,
    prior_drift,
    psi_categorical,
    psi_from_counts,
    psi_numeric,
)


def test_psi_matches_hand_computation() -> None:
    expected = (0.7 - 0.5) * np.log(0.7 / 0.5) + (0.3 - 0.5) * np.log(0.3 / 0.5)
    assert psi_from_counts(np.array([50, 50]), np.array([70, 30])) == pytest.approx(expected)
    assert psi_from_counts(np.array([5, 5]), np.array([5, 5])) == 0.0


def test_numeric_psi_small_for_same_distribution_large_for_shift() -> None:
    rng = np.random.default_rng(0)
    ref = rng.normal(size=5000)
    assert psi_numeric(ref, rng.normal(size=2000)) < 0.05
    assert psi_numeric(ref, rng.normal(loc=1.0, size=2000)) > 0.2
    # missing values are a bucket of their own: many more of them is drift too
    with_missing = np.where(rng.random(2000) < 0.5, np.nan, rng.normal(size=2000))
    assert psi_numeric(ref, with_missing) > 0.2


def test_categorical_psi_counts_unseen_values() -> None:
    ref = ["simul"] * 50 + ["reco"] * 50
    assert psi_categorical(ref, ["simul", "reco"] * 20) == pytest.approx(0.0)
    assert psi_categorical(ref, ["simul"] * 20 + ["new-release"] * 20) > 1.0
    assert psi_categorical(ref + [None] * 10, [None] * 5 + ["reco"] * 5) > 0.2


def test_ks_test_detects_shift_and_ignores_nans() -> None:
    rng = np.random.default_rng(1)
    ref = rng.normal(size=1000)
    stat, p = ks_test(ref, np.append(rng.normal(loc=0.5, size=500), [np.nan] * 10))
    assert stat > 0.15 and p < 1e-6
    assert np.isnan(ks_test(ref, np.array([np.nan]))[0])


def test_feature_drift_frame_has_one_row_per_shared_feature() -> None:
    specs = [FeatureSpec("corecount", "numerical"), FeatureSpec("processingtype", "categorical"),
             FeatureSpec("absent", "numerical")]  # fmt: skip
    ref = pd.DataFrame({"corecount": [1.0, 8.0] * 50, "processingtype": ["a", "b"] * 50})
    cur = pd.DataFrame({"corecount": [8.0] * 40, "processingtype": ["a", "b"] * 20})
    out = feature_drift(ref, cur, specs).set_index("feature")
    assert list(out.index) == ["corecount", "processingtype"]
    assert out.loc["corecount", "psi"] > 0.2 and out.loc["processingtype", "psi"] < 0.01
    assert np.isnan(out.loc["processingtype", "ks_stat"])
    assert out.loc["corecount", "n_current"] == 40


def test_prior_drift_psi_and_total_variation() -> None:
    psi, tvd = prior_drift(np.array([0, 1, 2, 3] * 25), np.array([3] * 50 + [0] * 50), 4)
    assert tvd == pytest.approx(0.5)
    assert psi > 0.5
    psi_same, tvd_same = prior_drift(np.array([0, 1] * 10), np.array([1, 0, -1]), 2)
    assert tvd_same == 0.0 and psi_same == 0.0
