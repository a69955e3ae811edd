"""The compiled tree walk (``models/tree_walk.py``) predicts what XGBoost and the numpy walk
predict, to the bit, one row at a time as in a batch; without numba the numpy walk serves."""

from __future__ import annotations

import builtins

import numpy as np
import pytest
import xgboost as xgb
from hypothesis import HealthCheck, given, settings
from test_xgb_inference import BOOSTER_CASES, _booster, _data, _requests

from scoutless.models import tree_walk
from scoutless.models.xgb_inference import build_ensemble, compile_booster


@pytest.fixture
def compiled():
    """The compiled walk for one test, then the state before it (the numpy walk unless the
    service's loader ran earlier in this process)."""
    had = tree_walk.kernel() is not None
    assert tree_walk.load()
    yield
    if not had:
        tree_walk.unload()


def _numpy_margin(trees, rows: np.ndarray) -> np.ndarray:
    tree_walk.unload()
    try:
        return trees.margin(rows)
    finally:
        tree_walk.load()


@settings(
    max_examples=12,
    deadline=None,
    # the fixture only loads the walk: the same for every example
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(**BOOSTER_CASES)
def test_compiled_margins_equal_xgboost_and_the_numpy_walk_bit_for_bit(
    compiled, seed, n_classes, native, depth, rounds, nan_share
):
    rng = np.random.default_rng(seed)
    X, y = _data(rng, 1500, n_classes, nan_share)
    booster = _booster(X, y, n_classes, native=native, depth=depth, rounds=rounds)
    trees = build_ensemble(booster)
    rows = _requests(rng, X)  # unseen, negative and NaN categories, NaN numbers
    margin = booster.inplace_predict(rows, predict_type="margin").reshape(len(rows), n_classes)
    got = trees.margin(rows)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, margin)
    assert np.array_equal(got.view(np.uint32), _numpy_margin(trees, rows).view(np.uint32))
    one_by_one = np.vstack([trees.margin(row[None]) for row in rows[:20]])  # as served
    assert np.array_equal(one_by_one.view(np.uint32), got[:20].view(np.uint32))
    proba = booster.inplace_predict(rows).reshape(len(rows), n_classes)
    np.testing.assert_allclose(trees.predict_proba(rows), proba, rtol=1e-6, atol=1e-7)


def test_a_compiled_value_booster_and_a_strided_matrix_predict_as_xgboost(compiled):
    rng = np.random.default_rng(6)
    X, y = _data(rng, 1500, 4, 0.2)
    d = xgb.DMatrix(X, label=y + rng.normal(size=len(y)))
    booster = xgb.train({"objective": "reg:squarederror", "max_depth": 5, "nthread": 1,
                         "tree_method": "hist", "seed": 0}, d, 20)  # fmt: skip
    trees = compile_booster(booster)  # checked on the probe rows through the compiled walk
    assert trees is not None
    rows = _requests(rng, X)
    np.testing.assert_array_equal(trees.predict_value(rows), booster.inplace_predict(rows))
    strided = np.asfortranarray(rows.astype(np.float64))  # converted, never refused
    np.testing.assert_array_equal(trees.predict_value(strided), booster.inplace_predict(rows))


def test_without_numba_the_numpy_walk_serves(monkeypatch, caplog):
    kernel, built = tree_walk._CODE.active, tree_walk._CODE.built
    real_import = builtins.__import__

    def no_numba(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name == "numba":
            raise ImportError("no module named numba")
        return real_import(name, *args, **kwargs)

    tree_walk._CODE.active = tree_walk._CODE.built = None
    monkeypatch.setattr(builtins, "__import__", no_numba)
    try:
        assert not tree_walk.load()
        assert tree_walk.kernel() is None
        assert "numba unavailable" in caplog.text
        rng = np.random.default_rng(7)
        X, y = _data(rng, 800, 3, 0.1)
        booster = _booster(X, y, 3, native=True, depth=4, rounds=5)
        rows = _requests(rng, X)
        margin = booster.inplace_predict(rows, predict_type="margin").reshape(len(rows), 3)
        np.testing.assert_array_equal(build_ensemble(booster).margin(rows), margin)
    finally:
        tree_walk._CODE.active, tree_walk._CODE.built = kernel, built


def test_the_service_loader_compiles_the_walk_before_any_request(monkeypatch, tmp_path):
    from scoutless.service import serving

    monkeypatch.setattr("scoutless.bundle.load_bundle", lambda path: "bundle")
    kernel = tree_walk._CODE.active
    tree_walk.unload()
    try:
        assert serving.load_bundle_default(tmp_path) == "bundle"
        assert tree_walk.kernel() is not None
    finally:
        tree_walk._CODE.active = kernel


def test_compiled_categories_from_the_dense_table_or_the_sorted_keys_agree(compiled, monkeypatch):
    from scoutless.models import xgb_inference

    rng = np.random.default_rng(8)
    X, y = _data(rng, 1500, 4, 0.1)
    booster = _booster(X, y, 4, native=True, depth=6, rounds=15)
    rows = _requests(rng, X)
    margin = booster.inplace_predict(rows, predict_type="margin").reshape(len(rows), 4)
    dense = build_ensemble(booster)
    assert dense.listed is not None
    np.testing.assert_array_equal(dense.margin(rows), margin)
    monkeypatch.setattr(xgb_inference, "DENSE_MAX", 0)
    searched = build_ensemble(booster)
    assert searched.listed is None
    np.testing.assert_array_equal(searched.margin(rows), margin)
