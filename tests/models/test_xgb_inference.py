"""The trees in numpy predict what XGBoost predicts, and anything else is left to XGBoost."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import xgboost as xgb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoutless.features.encoded import EncodedFeatures
from scoutless.models import xgb_inference
from scoutless.models.xgb import XGBLabelModel, XGBNativeModel
from scoutless.models.xgb_inference import (
    TreeEnsemble,
    UnsupportedModel,
    build_ensemble,
    compile_booster,
)


def _data(rng: np.random.Generator, n: int, n_classes: int, nan_share: float) -> tuple:
    """Two categorical columns (one wide), two numericals with NaN, a class mixing them."""
    X = np.column_stack([
        rng.integers(0, 60, n), rng.integers(0, 5, n), rng.normal(size=n), rng.normal(size=n)
    ]).astype(np.float32)  # fmt: skip
    y = (X[:, 0] % 3 + (X[:, 2] > 0) + 2 * (X[:, 1] == 4)).astype(int) % n_classes
    X[:, 2:][rng.random((n, 2)) < nan_share] = np.nan
    return X, y


def _booster(X, y, n_classes, *, native, depth, rounds, objective="multi:softprob", **extra):
    d = xgb.DMatrix(X, label=y, feature_types=["c", "c", "q", "q"] if native else None,
                    enable_categorical=native)  # fmt: skip
    params = {"objective": objective, "num_class": n_classes, "max_depth": depth,
              "tree_method": "hist", "nthread": 1, "seed": 0, **extra}  # fmt: skip
    return xgb.train(params, d, rounds)


def _requests(rng: np.random.Generator, X: np.ndarray) -> np.ndarray:
    """Rows as requests bring them: seen, unseen (beyond the vocabulary) and negative codes."""
    rows = X[rng.choice(len(X), 200)].copy()
    rows[:40, 0] = rng.integers(-3, 200, 40)
    rows[40:60, 1] = rng.integers(-1, 9, 20)
    return rows


#: the boosters the walk is checked on (here and in test_tree_walk.py)
BOOSTER_CASES = {
    "seed": st.integers(0, 10_000),
    "n_classes": st.integers(2, 5),
    "native": st.booleans(),
    "depth": st.integers(1, 8),
    "rounds": st.integers(1, 25),
    "nan_share": st.sampled_from([0.0, 0.2]),
}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**BOOSTER_CASES)
def test_margins_equal_xgboost_bit_for_bit_and_probabilities_to_float32(
    seed, n_classes, native, depth, rounds, nan_share
):
    rng = np.random.default_rng(seed)
    X, y = _data(rng, 1500, n_classes, nan_share)
    booster = _booster(X, y, n_classes, native=native, depth=depth, rounds=rounds)
    trees = build_ensemble(booster)
    rows = _requests(rng, X)
    margin = booster.inplace_predict(rows, predict_type="margin").reshape(len(rows), n_classes)
    np.testing.assert_array_equal(trees.margin(rows), margin)
    proba = booster.inplace_predict(rows).reshape(len(rows), n_classes)
    np.testing.assert_allclose(trees.predict_proba(rows), proba, rtol=1e-6, atol=1e-7)
    one_by_one = np.vstack([trees.margin(row[None]) for row in rows[:20]])  # as served
    np.testing.assert_array_equal(one_by_one, margin[:20])


def test_the_dense_table_and_the_binary_search_of_categories_agree(monkeypatch):
    rng = np.random.default_rng(1)
    X, y = _data(rng, 1500, 4, 0.1)
    booster = _booster(X, y, 4, native=True, depth=6, rounds=15)
    rows = _requests(rng, X)
    dense = build_ensemble(booster)
    assert dense.listed is not None
    monkeypatch.setattr(xgb_inference, "DENSE_MAX", 0)
    searched = build_ensemble(booster)
    assert searched.listed is None
    np.testing.assert_array_equal(searched.margin(rows), dense.margin(rows))


@pytest.mark.parametrize("cls", [XGBLabelModel, XGBNativeModel])
def test_models_predict_a_few_rows_in_numpy_and_agree_with_the_batch_path(cls, tmp_path):
    rng = np.random.default_rng(2)
    X, y = _data(rng, 2000, 4, 0.1)
    features = EncodedFeatures(X[:, :2].astype(np.int64), X[:, 2:])
    model = cls(n_classes=4, n_jobs=1, n_estimators=30).fit(features, y, eval_set=(features, y))
    model.save(tmp_path)
    loaded = cls.load(tmp_path)
    assert isinstance(
        loaded.__dict__.get("tree_ensemble"), TreeEnsemble
    )  # compiled at load, for the service
    (tmp_path / f"{cls.name}.ubj").unlink()  # read at load: the booster is the one loaded
    batch = loaded.predict_proba(features.take(np.arange(300)))  # above the small batch
    one_by_one = np.vstack([loaded.predict_proba(features.take(np.array([i]))) for i in range(300)])
    np.testing.assert_allclose(one_by_one, batch, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(one_by_one.argmax(axis=1), batch.argmax(axis=1))


@pytest.mark.parametrize(
    ("objective", "extra", "why"),
    [
        ("multi:softmax", {}, "objective multi:softmax"),
        ("multi:softprob", {"booster": "dart", "rate_drop": 0.1}, "booster dart"),
    ],
)
def test_models_it_does_not_know_are_refused_and_left_to_xgboost(objective, extra, why, caplog):
    rng = np.random.default_rng(3)
    X, y = _data(rng, 800, 3, 0.0)
    booster = _booster(X, y, 3, native=False, depth=3, rounds=5, objective=objective, **extra)
    with pytest.raises(UnsupportedModel, match=why):
        build_ensemble(booster)
    with caplog.at_level(logging.INFO, logger=xgb_inference.__name__):
        assert compile_booster(booster) is None
    assert why in caplog.text


def test_an_ensemble_that_disagrees_on_the_probes_is_refused(monkeypatch, caplog):
    rng = np.random.default_rng(4)
    X, y = _data(rng, 800, 3, 0.1)
    booster = _booster(X, y, 3, native=True, depth=4, rounds=5)
    assert compile_booster(booster) is not None
    monkeypatch.setattr(TreeEnsemble, "margin", lambda self, X: np.zeros((len(X), 3), np.float32))
    assert compile_booster(booster) is None
    assert "disagree" in caplog.text


def test_large_batches_are_left_to_xgboost():
    rng = np.random.default_rng(5)
    X, y = _data(rng, 800, 3, 0.0)
    trees = build_ensemble(_booster(X, y, 3, native=False, depth=4, rounds=10))
    assert trees.fits(1)
    assert not trees.fits(xgb_inference.MAX_CELLS // len(trees.left) + 1)


def test_a_value_booster_is_walked_too_and_an_ensemble_round_trips(tmp_path):
    """``reg:squarederror`` (the value models): the intercept plus the leaves, as XGBoost
    adds them; a saved ensemble loads back equal, without XGBoost."""
    rng = np.random.default_rng(6)
    X, y = _data(rng, 1500, 4, 0.2)
    d = xgb.DMatrix(X, label=y + rng.normal(size=len(y)))
    booster = xgb.train({"objective": "reg:squarederror", "max_depth": 5, "nthread": 1,
                         "tree_method": "hist", "seed": 0}, d, 20)  # fmt: skip
    trees = compile_booster(booster)
    assert trees is not None and trees.objective == "reg:squarederror" and trees.n_classes == 1
    rows = _requests(rng, X)
    np.testing.assert_array_equal(trees.predict_value(rows), booster.inplace_predict(rows))
    trees.save(tmp_path / "trees.npz")
    again = TreeEnsemble.load(tmp_path / "trees.npz")
    np.testing.assert_array_equal(again.predict(rows), trees.predict(rows))
    assert (again.width, again.depth, again.objective) == (
        trees.width,
        trees.depth,
        trees.objective,
    )
