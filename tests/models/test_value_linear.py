"""The ridge start of the value model's location: one shrunken effect per category, a
slope per numerical, its penalty chosen on held-out folds."""

from __future__ import annotations

import numpy as np
import pytest

from scoutless.features.encoded import EncodedFeatures
from scoutless.models.value_linear import ALPHAS, LinearBase, choose_alpha
from scoutless.models.value_model import fold_of


def _rows(n: int, noise: float, seed: int = 0) -> tuple[EncodedFeatures, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    effect = np.r_[0.0, np.linspace(-1.0, 1.0, 20)]
    codes = rng.integers(1, 21, (n, 1))
    x = rng.normal(size=(n, 1))
    x[rng.random(n) < 0.1] = np.nan  # missing: its own weight, not a zero slope
    y = 2.0 + effect[codes[:, 0]] + 0.5 * np.nan_to_num(x[:, 0], nan=3.0)
    y = y + noise * rng.normal(size=n)
    return EncodedFeatures(codes.astype(np.int64), x.astype(np.float32)), y, effect


def test_it_recovers_each_category_s_effect_and_the_slope():
    X, y, effect = _rows(4000, 0.1)
    base = LinearBase.fit(X, y, alpha=3.0)
    assert base.weights[0] == pytest.approx(0.5, abs=0.02)
    effects = base.effects[1:21] - base.effects[1:21].mean()
    np.testing.assert_allclose(effects, effect[1:] - effect[1:].mean(), atol=0.03)
    # a missing numerical: the intercept's share plus its own weight (3 x 0.5 here)
    assert base.missing_weights[0] == pytest.approx(1.5, abs=0.05)
    assert np.sqrt(np.mean((base.predict(X) - y) ** 2)) < 0.11


def test_a_code_it_never_saw_gets_the_unknown_s_effect():
    X, y, _ = _rows(500, 0.1)
    base = LinearBase.fit(X, y, alpha=3.0)
    unseen = EncodedFeatures(np.array([[0], [base.widths[0] + 5]]), np.zeros((2, 1), np.float32))
    a, b = base.predict(unseen)
    assert a == b


def test_the_penalty_grows_when_the_categories_say_nothing():
    fold = fold_of(600, 5, seed=0)
    X, y, _ = _rows(600, 0.05)
    assert choose_alpha(X, y, fold) == min(ALPHAS)
    noise = np.random.default_rng(1).normal(size=600)
    assert choose_alpha(X, noise, fold) == max(ALPHAS)


def test_saved_and_loaded_it_predicts_the_same(tmp_path):
    X, y, _ = _rows(300, 0.1)
    base = LinearBase.fit(X, y, alpha=10.0)
    base.save(tmp_path / "linear.npz")
    loaded = LinearBase.load(tmp_path / "linear.npz")
    assert loaded.alpha == 10.0
    np.testing.assert_allclose(loaded.predict(X), base.predict(X))


def test_a_row_gets_the_value_it_gets_alone_whatever_the_batch_s_memory_order():
    rng = np.random.default_rng(4)
    n, f = 40, 12
    numeric = np.asfortranarray(rng.lognormal(0, 2, (n, f)).astype(np.float32))  # column-major
    X = EncodedFeatures(rng.integers(0, 5, (n, 1)).astype(np.int64), numeric)
    base = LinearBase.fit(X, rng.normal(size=n), alpha=1.0)
    batch = base.predict(X)
    alone = [base.predict(X.take(np.array([i])))[0] for i in range(n)]
    assert batch.tolist() == alone  # bit for bit, as the service answers a grouped request
