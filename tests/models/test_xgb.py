"""XGBoost baselines: both encodings learn, unseen categories, save/load, class weights, grid."""

from __future__ import annotations

import numpy as np
import pytest

from scoutless.features.encoded import EncodedFeatures
from scoutless.models.base import balanced_class_weight
from scoutless.models.tuning import grid_points, grid_search_xgb
from scoutless.models.xgb import XGBLabelModel, XGBNativeModel


def _toy(n: int, seed: int) -> tuple[EncodedFeatures, np.ndarray]:
    rng = np.random.default_rng(seed)
    codes = rng.integers(1, 30, (n, 1))
    numeric = rng.normal(size=(n, 1)).astype(np.float32)
    numeric[rng.random(n) < 0.1] = np.nan
    group = np.isin(codes[:, 0], [3, 7, 11, 19, 23, 29]).astype(int)  # not ordered by code
    y = group * 2 + (np.nan_to_num(numeric[:, 0]) > 0)
    return EncodedFeatures(codes, numeric), y


@pytest.mark.parametrize("cls", [XGBLabelModel, XGBNativeModel])
def test_learns_and_round_trips(cls, tmp_path):
    X, y = _toy(2000, 0)
    Xv, yv = _toy(500, 1)
    model = cls(n_classes=5, n_jobs=1, n_estimators=200).fit(
        X, y, eval_set=(Xv, yv), class_weight=balanced_class_weight(y, 5)
    )
    proba = model.predict_proba(Xv)
    assert proba.shape == (500, 5)  # class 4 never seen: still a column
    np.testing.assert_allclose(proba.sum(axis=1), 1, atol=1e-5)
    assert (proba.argmax(axis=1) == yv).mean() > 0.9
    assert model.best_iteration_ < 200
    model.save(tmp_path)
    again = cls.load(tmp_path)
    np.testing.assert_array_equal(again.predict_proba(Xv), proba)
    assert again.hyperparameters()["native_categorical"] is (cls is XGBNativeModel)


def test_unseen_category_code_predicts_without_error():
    X, y = _toy(500, 2)
    model = XGBNativeModel(n_classes=4, n_jobs=1, n_estimators=20).fit(X, y, eval_set=(X, y))
    unseen = EncodedFeatures(np.array([[0], [500]]), np.array([[0.1], [np.nan]], np.float32))
    assert model.predict_proba(unseen).shape == (2, 4)


def test_class_weight_is_inverse_frequency():
    weights = balanced_class_weight(np.array([0, 0, 0, 1, 2, 2]), 4)
    np.testing.assert_allclose(weights, [6 / 9, 6 / 3, 6 / 6, 0])


def test_grid_points_and_search_report_every_point():
    assert grid_points({"b": [1, 2], "a": [3]}) == [{"a": 3, "b": 1}, {"a": 3, "b": 2}]
    with pytest.raises(ValueError, match="non-empty list"):
        grid_points({"a": []})
    X, y = _toy(600, 3)

    def make(params):
        return XGBLabelModel(n_classes=4, params=params, n_jobs=1, n_estimators=30)

    best, results = grid_search_xgb(make, X, y, grid={"max_depth": [1, 4]}, n_folds=2)
    assert [r["params"] for r in results] == [{"max_depth": 1}, {"max_depth": 4}]
    assert best == max(results, key=lambda r: r["cv_macro_f1"])["params"]


@pytest.mark.parametrize("cls", [XGBLabelModel, XGBNativeModel])
def test_unfitted_model_has_no_classes_and_refuses_to_predict_or_save(cls, tmp_path):
    from sklearn.exceptions import NotFittedError

    model = cls(n_classes=4, n_jobs=1, n_estimators=5)
    assert not hasattr(model, "classes_")
    X, y = _toy(200, 4)
    with pytest.raises(NotFittedError, match=f"{cls.name}: not fitted"):
        model.predict_proba(X)
    with pytest.raises(NotFittedError, match=f"{cls.name}: not fitted"):
        model.save(tmp_path)
    model.fit(X, y, eval_set=(X, y))
    np.testing.assert_array_equal(model.classes_, [0, 1, 2, 3])
    model.save(tmp_path)
    np.testing.assert_array_equal(cls.load(tmp_path).classes_, [0, 1, 2, 3])


@pytest.mark.parametrize("cls", [XGBLabelModel, XGBNativeModel])
def test_missing_numericals_are_a_class_of_their_own_for_the_trees(cls):
    """Missing numbers reach the trees as a sentinel below every value: a class that only
    the missing rows have is still learned, and the matrix holds no NaN."""
    rng = np.random.default_rng(5)
    n = 3000
    numeric = rng.normal(size=(n, 1)).astype(np.float32)
    missing = rng.random(n) < 0.2
    numeric[missing] = np.nan
    y = np.where(missing, 2, (numeric[:, 0] > 0).astype(int))
    X = EncodedFeatures(rng.integers(1, 5, (n, 1)), numeric)
    model = cls(n_classes=3, n_jobs=1, n_estimators=50).fit(X, y, eval_set=(X, y))
    assert not np.isnan(model._matrix(X)).any()
    assert (model.predict_proba(X).argmax(axis=1) == y).mean() > 0.98
    assert model.hyperparameters()["missing"] == "sentinel"


def test_bundle_saved_before_the_sentinel_keeps_nan(tmp_path):
    """A model saved without ``missing`` in its metadata was fitted on NaN and gets NaN."""
    import json

    X, y = _toy(800, 6)
    model = XGBNativeModel(n_classes=4, n_jobs=1, n_estimators=20).fit(X, y, eval_set=(X, y))
    model.save(tmp_path)
    meta_path = tmp_path / "xgb_native.json"
    meta = json.loads(meta_path.read_text())
    del meta["missing"]
    meta_path.write_text(json.dumps(meta))
    legacy = XGBNativeModel.load(tmp_path)
    assert legacy.missing == "nan"
    assert np.isnan(legacy._matrix(X)).any()
    assert XGBNativeModel.load(tmp_path).predict_proba(X).shape == (800, 4)


def test_for_refit_grows_the_fits_trees_scaled_to_the_rows_without_early_stopping():
    X, y = _toy(1000, 0)
    Xv, yv = _toy(300, 1)
    model = XGBLabelModel(n_classes=4, n_jobs=1, n_estimators=200).fit(X, y, eval_set=(Xv, yv))
    refit = model.for_refit(n_rows=2 * len(y), n_fit_rows=len(y))
    assert refit.n_estimators == 2 * (model.best_iteration_ + 1)
    assert not hasattr(refit, "classes_")  # a fresh, unfitted copy
    empty = (Xv.take(np.arange(0)), yv[:0])
    refit.fit(X, y, eval_set=empty)  # no validation rows: every tree is grown, none cut
    assert refit.best_iteration_ == refit.n_estimators - 1
    with pytest.raises(ValueError, match="n_rows"):
        model.for_refit(n_rows=0, n_fit_rows=len(y))
