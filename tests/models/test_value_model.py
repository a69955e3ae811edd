"""The cross-fitted value model: calibrated coverage on held-out tasks, a scale that ranks
tasks by their spread, folds in blocks of time on a time-ordered history, one served
location, and bundles written before still loading."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoutless.allocation.allocate import value_allocation
from scoutless.allocation.values import ConformalLevels
from scoutless.features.encoded import EncodedFeatures
from scoutless.models.value_model import LogValueModel, fold_of
from scoutless.models.xgb import tree_matrix

ALPHA = 0.1


def _tasks(n: int, seed: int) -> tuple[EncodedFeatures, np.ndarray, np.ndarray]:
    """Group 1 spreads six times as wide as group 2; the location follows a numeric."""
    rng = np.random.default_rng(seed)
    group = rng.integers(1, 3, n)
    x = rng.normal(size=n)
    sigma = np.where(group == 1, 0.6, 0.1)
    values = np.expm1(5.0 + 0.8 * x + sigma * rng.normal(size=n))
    encoded = EncodedFeatures(group[:, None].astype(np.int64), x[:, None].astype(np.float32))
    return encoded, values, group


@pytest.fixture(scope="module")
def fitted() -> LogValueModel:
    X, values, _ = _tasks(1600, 0)
    X_val, val_values, _ = _tasks(400, 1)
    return LogValueModel(n_estimators=200, folds=4, n_jobs=1).fit(
        X, values, eval_set=(X_val, val_values)
    )


def test_calibrated_value_under_allocates_alpha_on_held_out_tasks(fitted):
    X_cal, cal_values, _ = _tasks(1500, 2)
    X_test, need, _ = _tasks(6000, 3)
    levels = ConformalLevels.fit(fitted.predict_dist(X_cal), cal_values)
    value = value_allocation(fitted.predict_dist(X_test), levels, ALPHA).value
    under = float((need > value).mean())
    # the test rows' binomial spread and the calibration quantile's, three deviations each
    spread = 3 * math.sqrt(ALPHA * (1 - ALPHA) * (1 / len(need) + 1 / levels.n))
    assert abs(under - ALPHA) <= spread, (under, spread)


def test_the_scale_ranks_tasks_by_their_spread(fitted):
    X, _, group = _tasks(2000, 4)
    sigma = fitted.predict_dist(X).sigma
    wide, narrow = np.median(sigma[group == 1]), np.median(sigma[group == 2])
    assert wide > 3 * narrow, (wide, narrow)
    assert narrow == pytest.approx(0.1, rel=0.5) and wide == pytest.approx(0.6, rel=0.3)


def test_one_location_served_with_the_folds_mean_number_of_trees(fitted):
    # the location is linear in x here: the ridge fits it, the trees have little left
    assert len(fitted.fold_rounds_) == 4 and all(r >= 1 for r in fitted.fold_rounds_)
    assert fitted.location_.num_boosted_rounds() == round(np.mean(fitted.fold_rounds_))
    X, _, _ = _tasks(50, 5)
    trees = fitted.location_.inplace_predict(tree_matrix(X))
    np.testing.assert_allclose(
        fitted.predict_dist(X).mu, trees + fitted.linear_.predict(X), rtol=1e-6
    )


def test_saved_and_loaded_it_predicts_the_same_from_its_numpy_trees(fitted, tmp_path):
    files = fitted.save(tmp_path / "value")
    assert files == ["location.ubj", "location.trees.npz", "scale.ubj", "scale.trees.npz",
                     "linear.npz", "value.json"]  # fmt: skip
    loaded = LogValueModel.load(tmp_path / "value")
    assert loaded.folds == 4 and set(loaded.trees_) == {"location_", "scale_"}
    assert loaded.linear_.alpha == fitted.linear_.alpha
    assert "location_" not in vars(loaded)  # the booster is not built for a few rows
    X, _, _ = _tasks(3, 6)
    a, b = fitted.predict_dist(X), loaded.predict_dist(X)
    assert "location_" not in vars(loaded)
    np.testing.assert_allclose(a.mu, b.mu, rtol=1e-6)
    np.testing.assert_allclose(a.sigma, b.sigma, rtol=1e-6)


@pytest.mark.parametrize("with_trees", [True, False])
def test_a_bundle_written_before_cross_fitting_still_loads(fitted, tmp_path, with_trees):
    """Before: ``value.json`` without ``folds``, no ridge (``linear.npz``): the location is
    the trees alone; with or without the trees in numpy."""
    folder = tmp_path / "old"
    fitted.save(folder)
    (folder / "value.json").write_text(json.dumps({"n_estimators": 600, "seed": 42}))
    (folder / "linear.npz").unlink()
    if not with_trees:
        for npz in folder.glob("*.trees.npz"):
            npz.unlink()
    old = LogValueModel.load(folder)
    assert old.n_estimators == 600 and old.trees_["location_"] is not None
    assert old.linear_ is None and not old.linear
    X, _, _ = _tasks(20, 7)
    np.testing.assert_allclose(
        old.predict_dist(X).mu, fitted.location_.inplace_predict(tree_matrix(X)), rtol=1e-6
    )
    shutil.rmtree(folder)


def test_folds_are_balanced_and_seeded():
    fold = fold_of(103, 5, seed=1)
    assert sorted(np.bincount(fold)) == [20, 20, 21, 21, 21]
    np.testing.assert_array_equal(fold, fold_of(103, 5, seed=1))
    assert not np.array_equal(fold, fold_of(103, 5, seed=2))


@given(n=st.integers(2, 300), folds=st.integers(2, 7), seed=st.integers(0, 3))
def test_given_a_time_order_folds_are_balanced_blocks_of_time(n, folds, seed):
    folds = min(folds, n)
    order = np.random.default_rng(seed).permutation(n) * 10.0  # rows not in time order
    fold = fold_of(n, folds, seed=seed, order=order)
    counts = np.bincount(fold, minlength=folds)
    assert counts.max() - counts.min() <= 1 and counts.min() >= 1
    # every fold is one stretch of time: sorted by time, the folds never go back
    assert np.all(np.diff(fold[np.argsort(order)]) >= 0)


def _bursts(n_bursts: int, size: int, seed: int) -> tuple[EncodedFeatures, np.ndarray]:
    """A history of bursts: each of one user's near-copies (same features, values within
    1 %), submitted together; bursts differ by 0.5 in log value beyond what the
    features say."""
    rng = np.random.default_rng(seed)
    x = np.repeat(rng.normal(size=n_bursts), size)
    burst = np.repeat(rng.normal(scale=0.5, size=n_bursts), size)
    values = np.expm1(4.0 + 0.5 * x + burst + 0.01 * rng.normal(size=len(x)))
    noise = x + 1e-4 * rng.normal(size=len(x))  # what tells the copies of one burst apart
    encoded = EncodedFeatures(
        np.zeros((len(x), 1), np.int64), np.column_stack([x, noise]).astype(np.float32)
    )
    return encoded, values


def test_on_a_time_ordered_history_the_scale_is_not_fooled_by_bursts_of_copies():
    """Random folds put a burst's copies on both sides of a fold: the out-of-fold
    residuals look like the 1 % within a burst, and the scale promises a precision no
    new burst has; blocks of time see the 0.5 between bursts."""
    X, values = _bursts(60, 20, seed=0)
    X_val, val_values = _bursts(15, 20, seed=1)
    time = (np.arange(len(values)), len(values) + np.arange(len(val_values)))
    fit = {"random": None, "blocks": time}
    sigma = {
        name: np.median(
            LogValueModel(n_estimators=100, folds=5, linear=False, n_jobs=1)
            .fit(X, values, eval_set=(X_val, val_values), order=order)
            .predict_dist(_bursts(20, 20, seed=2)[0])
            .sigma
        )
        for name, order in fit.items()
    }
    assert sigma["blocks"] > 3 * sigma["random"], sigma
    assert sigma["blocks"] == pytest.approx(0.5, rel=0.6), sigma


def test_a_small_table_gets_fewer_folds_and_too_few_rows_are_refused():
    X, values, _ = _tasks(7, 8)
    model = LogValueModel(n_estimators=5, folds=5).fit(
        X.take(np.arange(5)), values[:5], eval_set=(X.take(np.arange(5, 7)), values[5:])
    )
    assert len(model.fold_rounds_) == 3
    with pytest.raises(ValueError, match="2 fit and 1 validation rows"):
        LogValueModel(folds=5).fit(
            X.take(np.arange(2)), values[:2], eval_set=(X.take(np.arange(2, 3)), values[2:3])
        )
    with pytest.raises(ValueError, match="folds=1"):
        LogValueModel(folds=1)


def _additive(n: int, seed: int) -> tuple[EncodedFeatures, np.ndarray, np.ndarray]:
    """A log value that is a sum of effects of 150 releases (a few rows each) and of a
    numeric: the shape the ridge is there for. Returns the true location too."""
    rng = np.random.default_rng(seed)
    effect = np.random.default_rng(99).normal(0, 0.5, 151)
    release = rng.integers(1, 151, n)
    x = rng.normal(size=n)
    loc = 4.0 + effect[release] + 0.7 * x
    values = np.expm1(loc + 0.2 * rng.normal(size=n))
    codes = np.c_[release, rng.integers(1, 4, n)].astype(np.int64)
    return EncodedFeatures(codes, x[:, None].astype(np.float32)), values, loc


def test_the_ridge_start_lowers_the_location_error_on_additive_effects():
    X, values, _ = _additive(1500, 10)
    X_val, val_values, _ = _additive(400, 11)
    X_test, _, loc = _additive(2000, 12)
    errors = {}
    for linear in (True, False):
        model = LogValueModel(n_estimators=400, folds=4, linear=linear, n_jobs=1).fit(
            X, values, eval_set=(X_val, val_values)
        )
        errors[linear] = float(np.sqrt(np.mean((model.predict_dist(X_test).mu - loc) ** 2)))
        assert (getattr(model, "linear_", None) is not None) == linear
    assert errors[True] < 0.7 * errors[False], errors


def test_a_few_rows_tree_matrix_is_made_once_per_rows_and_sentinel():
    from scoutless.fast_paths import current

    rng = np.random.default_rng(4)
    numeric = rng.normal(size=(3, 4)).astype(np.float32)
    numeric[1, 2] = np.nan
    X = EncodedFeatures(rng.integers(0, 5, (3, 2)), numeric)
    first = tree_matrix(X)
    assert tree_matrix(X) is first  # the classifiers and value models read one matrix
    fresh = tree_matrix(EncodedFeatures(X.codes, X.numeric))
    assert fresh is not first and np.array_equal(fresh, first) and not np.isnan(first).any()
    with_nan = tree_matrix(X, sentinel=False)
    assert tree_matrix(X, sentinel=False) is with_nan and np.isnan(with_nan[1, 4])
    many = EncodedFeatures(np.zeros((current().rows + 1, 2), np.int64),
                           np.zeros((current().rows + 1, 4), np.float32))  # fmt: skip
    assert tree_matrix(many) is not tree_matrix(many)  # a batch's: not held on to
