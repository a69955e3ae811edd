"""TabularMLP and its trainer: embedding sizes, validation, learning, early stopping, save/load."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from scoutless.features.encoded import EncodedFeatures
from scoutless.models.dnn import Dropout, TabularMLP, embedding_dim
from scoutless.models.dnn_inputs import numeric_input
from scoutless.models.dnn_model import DNNModel
from scoutless.models.dnn_params import DNNParams

torch.set_num_threads(1)


@pytest.mark.parametrize(
    ("vocabulary", "dim"), [(1, 1), (2, 2), (3, 2), (4, 3), (7, 3), (8, 4), (1000, 10), (2**40, 32)]
)
def test_embedding_size_is_min_32_floor_log2_plus_one(vocabulary, dim):
    assert embedding_dim(vocabulary) == dim


def test_module_builds_one_embedding_per_categorical_and_returns_logits():
    net = TabularMLP(cardinalities=[5, 300], d_numerical=4, n_classes=3)
    assert [e.embedding_dim for e in net.embeddings] == [3, 9]
    assert net.blocks[0].in_features == 3 + 9 + 4
    widths = [m.out_features for m in net.blocks if isinstance(m, torch.nn.Linear)]
    assert widths == [256, 128, 64]
    drops = [m.p for m in net.blocks if isinstance(m, Dropout)]
    assert drops == [0.4, 0.3, 0.3]
    assert sum(isinstance(m, torch.nn.BatchNorm1d) for m in net.blocks) == 3
    net.eval()
    out = net(torch.zeros(6, 2, dtype=torch.long), torch.zeros(6, 4))
    assert out.shape == (6, 3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_classes": 1}, "n_classes=1"),
        ({"cardinalities": [0]}, "must all be positive"),
        ({"dropouts": (0.1,)}, "one rate"),
        ({"d_hidden": ()}, "non-empty"),
        ({"cardinalities": [], "d_numerical": 0}, "at least one"),
    ],
)
def test_module_validates_arguments_at_once(kwargs, message):
    args = {"cardinalities": [3], "d_numerical": 2, "n_classes": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        TabularMLP(**args)


def test_module_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        TabularMLP([3], 2, 2)  # type: ignore[misc]


def test_numeric_input_appends_missing_flags():
    out = numeric_input(np.array([[1.5, np.nan]], dtype=np.float32))
    np.testing.assert_array_equal(out, [[1.5, 0.0, 0.0, 1.0]])


def _toy(n: int, seed: int) -> tuple[EncodedFeatures, np.ndarray]:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 6, (n, 1))
    numeric = rng.normal(size=(n, 2)).astype(np.float32)
    y = ((codes[:, 0] % 3) + (numeric[:, 0] > 0.5)).clip(0, 2)
    numeric[rng.random(n) < 0.1, 1] = np.nan
    return EncodedFeatures(codes, numeric), y


def _model(**params) -> DNNModel:
    base = {"max_epochs": 12, "batch_size": 128, "learning_rate": 5e-3, **params}
    return DNNModel(n_classes=3, cardinalities=[6], n_numerical=2, params=DNNParams(**base))


def test_dnn_learns_restores_best_epoch_and_calibrates(tmp_path):
    X, y = _toy(1500, 0)
    Xv, yv = _toy(400, 1)
    model = _model().fit(X, y, eval_set=(Xv, yv), class_weight=np.ones(3))
    accuracies = [h["val_accuracy"] for h in model.history_]
    assert max(accuracies) > 0.85
    assert model.best_epoch_ == int(np.argmax(accuracies)) + 1
    best_acc = (model.predict_proba(Xv).argmax(axis=1) == yv).mean()
    assert best_acc == pytest.approx(max(accuracies))  # the best weights, not the last
    proba = model.predict_proba(Xv)
    np.testing.assert_allclose(proba.sum(axis=1), 1, atol=1e-9)
    assert 0.05 < model.temperature_ < 20
    model.save(tmp_path)
    again = DNNModel.load(tmp_path)
    np.testing.assert_array_equal(again.predict_proba(Xv), proba)


def test_early_stopping_stops_after_patience_without_improvement():
    X, y = _toy(600, 2)
    Xv, _ = _toy(200, 3)
    noise = np.random.default_rng(0).integers(0, 3, 200)  # unlearnable validation labels
    model = _model(max_epochs=30, patience=2).fit(X, y, eval_set=(Xv, noise))
    assert len(model.history_) < 30
    assert len(model.history_) - model.best_epoch_ == 2


def test_same_seed_same_model():
    X, y = _toy(500, 4)
    Xv, yv = _toy(100, 5)
    a = _model(max_epochs=3).fit(X, y, eval_set=(Xv, yv))
    b = _model(max_epochs=3).fit(X, y, eval_set=(Xv, yv))
    np.testing.assert_array_equal(a.predict_proba(Xv), b.predict_proba(Xv))


def test_labels_out_of_range_are_refused():
    X, y = _toy(50, 6)
    with pytest.raises(ValueError, match=r"dnn.fit: labels must lie in \[0, 3\)"):
        _model().fit(X, y + 5, eval_set=(X, y))


def test_auxiliary_value_regression_trains_saves_and_loads(tmp_path):
    X, y = _toy(800, 7)
    Xv, yv = _toy(200, 8)
    values = np.exp(y + np.random.default_rng(0).normal(0, 0.2, len(y)))
    values[::10] = np.nan  # rows without a value add no auxiliary loss
    model = _model(max_epochs=3, aux_weight=1.0).fit(X, y, eval_set=(Xv, yv), values=values)
    assert model.d_aux_ == 1 and model.module_.aux_head is not None
    model.save(tmp_path)
    again = DNNModel.load(tmp_path)
    assert again.module_.aux_head is not None
    np.testing.assert_array_equal(again.predict_proba(Xv), model.predict_proba(Xv))
    plain = _model(max_epochs=1).fit(X, y, eval_set=(Xv, yv), values=values)
    assert plain.d_aux_ == 0 and plain.module_.aux_head is None  # aux_weight=0: no head


def test_small_batch_numpy_path_matches_torch():
    X, y = _toy(300, 9)
    model = _model(max_epochs=2).fit(X, y, eval_set=(X, y))
    many = model.predict_logits(X)  # > FastPaths.rows rows: torch
    few = np.vstack([model.predict_logits(X.take(np.arange(i, i + 1))) for i in range(10)])
    np.testing.assert_allclose(few, many[:10], rtol=1e-4, atol=1e-5)


def test_dropout_keeps_the_expected_share_and_scale():
    drop = Dropout(0.4)
    out = drop(torch.ones(200, 500))
    kept = out > 0
    assert kept.float().mean().item() == pytest.approx(0.6, abs=0.01)
    assert torch.allclose(out[kept], torch.tensor(1 / 0.6))
    drop.eval()
    assert torch.equal(drop(torch.ones(3, 3)), torch.ones(3, 3))


def test_small_tables_get_smaller_batches():
    from scoutless.models.dnn_trainer import effective_batch_size

    assert effective_batch_size(2048, 1_000_000) == 2048
    assert effective_batch_size(2048, 6000) == 187  # 32 steps per epoch
    assert effective_batch_size(2048, 500) == 64
    assert effective_batch_size(128, 100_000) == 128


def test_unfitted_model_has_no_classes_and_refuses_to_predict_or_save(tmp_path):
    from sklearn.exceptions import NotFittedError

    model = _model()
    assert not hasattr(model, "classes_")
    X, y = _toy(100, 10)
    with pytest.raises(NotFittedError, match="dnn: not fitted"):
        model.predict_proba(X)
    with pytest.raises(NotFittedError, match="dnn: not fitted"):
        model.save(tmp_path)
    model.fit(X, y, eval_set=(X, y))
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])
    assert not hasattr(model.with_params(model.params), "classes_")  # the copy is unfitted
    model.save(tmp_path)
    np.testing.assert_array_equal(DNNModel.load(tmp_path).classes_, [0, 1, 2])


def test_numpy_pass_finds_layers_by_type_and_refuses_unknown_blocks():
    from scoutless.models.dnn_inference import InferenceWeights, hidden_layers

    net = TabularMLP(cardinalities=[4], d_numerical=2, n_classes=3, d_hidden=(8, 5),
                     dropouts=(0.0, 0.1))  # fmt: skip
    weights = InferenceWeights.of(net.eval(), fold=False)
    assert [w.shape for w, _ in weights.layers] == [(3 + 2, 8), (8, 5), (5, 3)]
    folded = InferenceWeights.of(net.eval())  # the embedding's rows moved into its table
    assert [w.shape for w, _ in folded.layers] == [(2, 8), (8, 5), (5, 3)]
    with pytest.raises(TypeError, match="expected Linear"):
        hidden_layers(torch.nn.Sequential(torch.nn.ReLU()))


@pytest.mark.parametrize("head", ["softmax", "ordinal"])
@pytest.mark.parametrize("ple", [None, (2, 4, 3)])
def test_embeddings_folded_into_the_first_layer_give_the_same_logits(head, ple):
    """The folded numpy pass = the unfolded one = their torch batch pass = the module, for
    every head and embedding."""
    from scoutless.models.dnn_inference import InferenceWeights

    torch.manual_seed(0)
    net = TabularMLP(cardinalities=[5, 40, 3], d_numerical=6, n_classes=4, d_hidden=(16, 8),
                     dropouts=(0.1, 0.1), head=head, ple=ple).eval()  # fmt: skip
    for norm in (m for m in net.modules() if isinstance(m, torch.nn.BatchNorm1d)):
        norm.running_mean.uniform_(-1, 1)  # non-trivial statistics, so folding is exercised
        norm.running_var.uniform_(0.5, 2)
    rng = np.random.default_rng(1)
    codes = np.stack([rng.integers(0, n, 7) for n in (5, 40, 3)], axis=1)
    numeric = rng.normal(size=(7, 6)).astype(np.float32)
    with torch.no_grad():
        expected = net(torch.from_numpy(codes), torch.from_numpy(numeric)).numpy()
    folded, unfolded = InferenceWeights.of(net), InferenceWeights.of(net, fold=False)
    assert folded.folded is not None and unfolded.folded is None
    np.testing.assert_allclose(folded.logits(codes, numeric), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(unfolded.logits(codes, numeric), expected, rtol=1e-4, atol=1e-5)
    as_tensors = torch.from_numpy(codes), torch.from_numpy(numeric)  # the batch pass
    np.testing.assert_allclose(folded.torch_logits(*as_tensors), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(unfolded.torch_logits(*as_tensors), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "params", [{}, {"head": "ordinal", "aux_weight": 1.0, "ple_bins": 4, "ple_dim": 3}]
)
def test_a_saved_model_predicts_from_its_arrays_as_its_module_does(tmp_path, params):
    """Loading reads the numpy arrays saved beside the state dict: the probabilities equal
    the module's own forward pass (1e-5), no module is built until asked for, and a folder
    saved without the arrays (older bundles) derives them from the state dict, the same."""
    from scoutless.models.dnn_inputs import feature_tensors
    from scoutless.models.dnn_model import INFERENCE_FILE
    from scoutless.models.temperature import softmax

    X, y = _toy(300, 10)
    values = np.exp(y + 1.0)
    model = _model(max_epochs=2, **params).fit(X, y, eval_set=(X, y), values=values)
    assert INFERENCE_FILE in model.save(tmp_path)
    loaded = DNNModel.load(tmp_path)
    few = X.take(np.arange(3))
    expected = softmax(model._torch_logits(*feature_tensors(few)) / model.temperature_)
    np.testing.assert_allclose(loaded.predict_proba(few), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(X), atol=1e-5)
    assert "module_" not in loaded.__dict__  # predicting built no torch module
    (tmp_path / INFERENCE_FILE).unlink()
    older = DNNModel.load(tmp_path)
    np.testing.assert_array_equal(older.predict_proba(few), loaded.predict_proba(few))
    (tmp_path / "dnn.pt").unlink()  # the state was read at load: the module is that one
    assert isinstance(loaded.module_, TabularMLP)  # built on first use, for training on
    built, trained = loaded.module_.state_dict(), model.module_.state_dict()
    assert all(torch.equal(built[k], trained[k]) for k in trained)
