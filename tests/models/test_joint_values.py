"""Several targets' value models predicting the same rows together (the service's one
pass: ``JointLinear``, ``ValueModels``) give each target the numbers of its own call, bit
for bit, over many widths of vocabulary, unseen and missing inputs and row counts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.config import Settings
from scoutless.features.encoded import EncodedFeatures
from scoutless.models.value_linear import JointLinear, LinearBase
from scoutless.models.value_model import ValueModels


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def _base(rng: np.random.Generator, categoricals: int, numericals: int) -> LinearBase:
    widths = rng.integers(1, 30, categoricals).astype(np.int64)
    return LinearBase(
        float(rng.normal(3, 2)), rng.normal(0, 1, numericals), rng.normal(0, 1, numericals),
        widths, rng.normal(0, 1, int(widths.sum())), 3.0,
    )  # fmt: skip


def _rows(rng: np.random.Generator, n: int, categoricals: int, numericals: int):
    codes = rng.integers(-2, 40, (n, categoricals)).astype(np.int64)  # unseen past a width
    numeric = rng.normal(0, 3, (n, numericals)).astype(np.float32)
    numeric[rng.random((n, numericals)) < 0.2] = np.nan
    return EncodedFeatures(codes, numeric)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    n=st.sampled_from([1, 2, 8, 33, 200]),
    targets=st.integers(1, 5),
    categoricals=st.sampled_from([0, 1, 7]),
    numericals=st.sampled_from([1, 5, 9, 30]),  # around the pairwise sum's block of 8
)
def test_the_joint_ridge_is_each_ridge_bit_for_bit(seed, n, targets, categoricals, numericals):
    rng = np.random.default_rng(seed)
    bases = [_base(rng, categoricals, numericals) for _ in range(targets)]
    X = _rows(rng, n, categoricals, numericals)
    joint = JointLinear.of(bases).predict(X)
    assert joint.shape == (targets, n)
    for base, row in zip(bases, joint, strict=True):
        assert np.array_equal(_bits(row), _bits(base.predict(X)))


def test_ridges_of_different_features_are_refused_together():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="different feature sets"):
        JointLinear.of([_base(rng, 2, 3), _base(rng, 3, 3)])


def test_value_models_together_answer_as_each_alone(tmp_path):
    """A real bundle's value models (one without its ridge, as a bundle saved before it)."""
    import sys

    sys.path.insert(0, "benchmarks")
    try:
        from serve_world import demo_table
    finally:
        sys.path.remove("benchmarks")
    from scoutless.bundle import load_bundle
    from scoutless.training import train_bundle

    train_bundle(demo_table(300), tmp_path / "b", progress=False, max_epochs=1, n_jobs=1, settings=Settings())
    predictor = load_bundle(tmp_path / "b")
    models = {t: predictor._value_model(t) for t in predictor.targets}
    models[predictor.targets[0]].linear_ = None
    shape = predictor.encoder.transform(demo_table(5).X())
    for n in (1, 40, 70):  # 70: past the small batch, the boosters themselves
        X = _rows(np.random.default_rng(n), n, shape.codes.shape[1], shape.numeric.shape[1])
        together = ValueModels(models).predict_dists(X)
        for target, model in models.items():
            alone = model.predict_dist(X)
            for name in ("offset", "mu", "sigma"):
                assert np.array_equal(_bits(getattr(together[target], name)),
                                      _bits(getattr(alone, name))), (n, target, name)  # fmt: skip
    served = predictor.value_distributions(X, predictor.targets[1:])
    assert list(served) == predictor.targets[1:]
    for target, dist in served.items():
        assert np.array_equal(_bits(dist.mu), _bits(predictor.value_distribution(X, target).mu))


@pytest.mark.parametrize("classes", [1, 2, 4, 5, 9])
def test_class_probabilities_are_the_softmax_before(classes):
    """The walk's softmax by the ufuncs' reductions equals ndarray.max and .sum's."""
    from types import SimpleNamespace

    from scoutless.models.xgb_inference import TreeEnsemble

    rng = np.random.default_rng(classes)
    margin = rng.normal(0, 8, (70, classes)).astype(np.float32)
    margin[0] = 88.0  # exp at its float32 edge after the shift
    walk = SimpleNamespace(margin=lambda X: margin)  # the margins a walk gave
    got = TreeEnsemble.predict_proba(walk, margin)  # type: ignore[arg-type]
    e = np.exp(margin - margin.max(axis=1, keepdims=True))
    want = (e / e.sum(axis=1, keepdims=True)).astype(np.float64)
    assert np.array_equal(_bits(got), _bits(want))
