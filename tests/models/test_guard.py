"""The served-prediction guard: never worse than an input baseline on validation."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.features.encoders import FeatureEncoder
from scoutless.features.spec import FeatureSpec
from scoutless.models.guard import (
    RobustSelection,
    ServingGuard,
    baseline_classes,
    baseline_feature_columns,
    fit_guard,
    macro_f1,
)


def _scores(y: np.ndarray, pred: np.ndarray) -> tuple[float, float]:
    from sklearn.metrics import f1_score

    return float(f1_score(y, pred, average="macro")), float(np.mean(y == pred))


@settings(max_examples=60, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(-1, 5), st.integers(0, 6)), min_size=1, max_size=60))
def test_macro_f1_is_sklearns_to_the_bit(pairs) -> None:
    """The guard's own macro-F1 (labels absent on one side, -1 for no class) is sklearn's."""
    from sklearn.metrics import f1_score

    y, pred = (np.array(side) for side in zip(*pairs, strict=True))
    assert macro_f1(y, pred) == f1_score(y, pred, average="macro", zero_division=0)


def _noisy_proba(y: np.ndarray, n_classes: int, right: float, rng) -> np.ndarray:
    """Probabilities whose argmax is the truth with probability ``right``."""
    guess = np.where(rng.random(len(y)) < right, y, rng.integers(0, n_classes, len(y)))
    proba = np.full((len(y), n_classes), 0.1)
    proba[np.arange(len(y)), guess] = 1.0
    return proba / proba.sum(axis=1, keepdims=True)


def test_weak_model_falls_back_to_a_strong_baseline():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 2000)
    baseline = np.where(rng.random(2000) < 0.85, y, rng.integers(0, 4, 2000))
    baseline[:100] = -1  # no history for some rows
    proba = _noisy_proba(y, 4, 0.5, rng)
    guard = fit_guard("walltime", "xgb", y, proba, {"last2": baseline})
    served = guard.apply(proba, baseline).argmax(axis=1)
    f1, acc = _scores(y, served)
    base_f1, base_acc = _scores(y, np.where(baseline >= 0, baseline, 0))
    assert guard.baseline == "last2" and guard.blend > 0.5
    assert f1 >= base_f1 and acc >= base_acc
    assert guard.validation["baselines"]["last2"]["accuracy"] == base_acc


def test_strong_model_is_served_as_is_and_round_trips():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 1500)
    baseline = np.where(rng.random(1500) < 0.4, y, rng.integers(0, 3, 1500))
    proba = _noisy_proba(y, 3, 0.9, rng)
    guard = fit_guard("memory", "dnn", y, proba, {"user_request": baseline})
    f1, acc = _scores(y, guard.apply(proba, baseline).argmax(axis=1))
    assert f1 >= _scores(y, proba.argmax(axis=1))[0] - 0.01 and acc > 0.85
    again = ServingGuard.from_dict(guard.to_dict())
    np.testing.assert_allclose(again.apply(proba, baseline), guard.apply(proba, baseline))


def test_prior_offsets_and_blend_change_the_served_class():
    guard = ServingGuard("io", "xgb", [0.0, np.log(4.0)], "recent_prior", "last2", 0.6)
    proba = np.array([[0.7, 0.3], [0.7, 0.3]])
    served = guard.apply(proba, np.array([0, -1]))
    # row 0: the baseline's class 0 outweighs; row 1 has no baseline: the prior decides
    assert served.argmax(axis=1).tolist() == [0, 1]
    np.testing.assert_allclose(served.sum(axis=1), 1.0)


def test_baseline_classes_are_read_back_from_the_encoded_input():
    column = baseline_feature_columns("walltime")["last2"]
    frame = pd.DataFrame({column: ["0", "2", "none", "2", "0", "none", "7", "7"]})
    encoder = FeatureEncoder([FeatureSpec(column, "categorical")], min_count=1).fit(frame)
    classes = baseline_classes(encoder.transform(frame), encoder, column, n_classes=3)
    assert classes.tolist() == [0, 2, -1, 2, 0, -1, -1, -1]  # "7" is no class of 3


def test_a_margin_within_noise_serves_the_baseline_class():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 4, 400)
    baseline = np.where(rng.random(400) < 0.7, y, rng.integers(0, 4, 400))
    # the model agrees with the baseline except on a handful of rows it gets right
    proba = np.full((400, 4), 0.05)
    guess = baseline.copy()
    fixed = np.flatnonzero(guess != y)[:3]
    guess[fixed] = y[fixed]
    proba[np.arange(400), guess] = 0.85
    guard = fit_guard("walltime", "xgb", y, proba, {"last2": baseline})
    assert (guard.baseline, guard.blend, guard.adjustment) == ("last2", 1.0, "none")
    assert "robustly" in guard.chosen_because


@settings(max_examples=50, deadline=None)
@given(
    st.integers(2, 5).flatmap(
        lambda k: st.tuples(
            st.lists(
                st.lists(st.floats(0.01, 1.0), min_size=k, max_size=k), min_size=1, max_size=20
            ),
            st.lists(st.floats(-2.0, 2.0), min_size=k, max_size=k),
            st.lists(st.integers(-1, k - 1), min_size=20, max_size=20),
        )
    ),
    st.sampled_from([0.0, 0.25, 1.0]),
)
def test_prior_shift_keeps_rows_normalised_and_is_the_identity_when_priors_match(case, blend):
    rows, offsets, classes = case
    proba = np.asarray(rows)
    proba /= proba.sum(axis=1, keepdims=True)
    baseline = np.asarray(classes[: len(proba)])
    shifted = ServingGuard("t", "m", offsets, "recent_prior", "last2", blend).apply(proba, baseline)
    np.testing.assert_allclose(shifted.sum(axis=1), 1.0)
    same = ServingGuard("t", "m", [0.3] * proba.shape[1], "recent_prior").apply(proba)
    np.testing.assert_allclose(same, proba)  # a constant offset: train prior = recent prior


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.3, 0.95), st.floats(0.3, 0.95))
def test_the_guard_serves_the_anchor_unless_a_rule_beats_it_robustly(seed, right, agree):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, 300)
    baseline = np.where(rng.random(300) < agree, y, rng.integers(0, 3, 300))
    proba = _noisy_proba(y, 3, right, rng)
    robust = RobustSelection(n_resamples=100)
    guard = fit_guard("walltime", "xgb", y, proba, {"last2": baseline}, robust=robust)
    served = guard.apply(proba, baseline).argmax(axis=1)
    f1, acc = _scores(y, served)
    base_f1, base_acc = _scores(y, baseline)
    if (guard.baseline, guard.blend, guard.adjustment) == ("last2", 1.0, "none"):
        assert (f1, acc) == (base_f1, base_acc)
    else:  # a robust lead: positive lower bound, so better on these rows in both metrics
        assert guard.validation["robust_lower_bound"] > 0
        assert f1 >= base_f1 and acc >= base_acc


def _biased_model(rng, n: int, shrink: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Truth, a 50 %-right baseline and an 85 %-right model whose class-2 probability is
    scaled by ``shrink`` (0.5: its least confident class-2 answers become another class)."""
    y = rng.integers(0, 3, n)
    baseline = np.where(rng.random(n) < 0.5, y, rng.integers(0, 3, n))
    guess = np.where(rng.random(n) < 0.85, y, rng.integers(0, 3, n))
    confidence = rng.uniform(0.35, 0.9, n)
    proba = np.repeat(((1 - confidence) / 2)[:, None], 3, axis=1)
    proba[np.arange(n), guess] = confidence
    proba[:, 2] *= shrink
    return y, baseline, proba / proba.sum(axis=1, keepdims=True)


def test_a_model_that_beats_the_anchor_is_served_plain_unless_a_rule_beats_it_robustly():
    y, baseline, proba = _biased_model(np.random.default_rng(5), 1500, shrink=1.0)
    # a prior that nudges towards class 1: it moves a few rows, never robustly for the better
    nudge = np.array([0.32, 0.36, 0.32])
    guard = fit_guard("walltime", "xgb", y, proba, {"last2": baseline}, recent_prior=nudge)
    assert (guard.adjustment, guard.baseline, guard.blend) == ("none", None, 0.0)
    assert "none of the" in guard.chosen_because
    assert guard.validation["served"] == guard.validation["model"]


def test_a_prior_that_repairs_a_biased_model_robustly_is_served():
    y, baseline, proba = _biased_model(np.random.default_rng(6), 1500, shrink=0.5)
    fair = np.array([1.0, 1.0, 2.0]) / 4  # undoes the class-2 bias
    guard = fit_guard("walltime", "xgb", y, proba, {"last2": baseline}, recent_prior=fair)
    assert guard.adjustment != "none" and "plain model robustly" in guard.chosen_because
    assert guard.validation["served"]["accuracy"] > guard.validation["model"]["accuracy"] + 0.03
