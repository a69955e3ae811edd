"""DNN options beyond the reference: piecewise-linear numerical embeddings, the ordinal
head, the one-cycle schedule: shapes, ordering guarantees, numpy path, save/load."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.features.encoded import EncodedFeatures
from scoutless.models.dnn import TabularMLP
from scoutless.models.dnn_inputs import aux_target
from scoutless.models.dnn_model import DNNModel
from scoutless.models.dnn_params import DNNParams
from scoutless.models.numeric_embedding import (
    PiecewiseLinearEmbedding,
    piecewise_linear,
    quantile_edges,
)
from scoutless.models.ordinal import CumulativeLinkHead, boundaries

torch.set_num_threads(1)


def test_quantile_edges_pad_columns_with_few_values_and_ignore_nan():
    values = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, np.nan], [3.0, 1.0]])
    edges = quantile_edges(values, 3)
    np.testing.assert_allclose(edges[0], [0, 1, 2, 3])
    np.testing.assert_allclose(edges[1], [1, 1, 1, 1])  # one value: zero-width bins
    with pytest.raises(ValueError, match="n_bins=0"):
        quantile_edges(values, 0)


def test_piecewise_linear_components_fill_bins_left_to_right():
    edges = torch.tensor([[0.0, 1.0, 3.0]])
    out = piecewise_linear(torch.tensor([[-1.0], [0.5], [2.0], [9.0]]), edges)
    np.testing.assert_allclose(out[:, 0].numpy(), [[0, 0], [0.5, 0], [1, 0.5], [1, 1]])


def test_ple_embedding_shape_and_edge_checks():
    ple = PiecewiseLinearEmbedding(3, 4, 5)
    assert ple(torch.zeros(7, 3)).shape == (7, 15)
    with pytest.raises(ValueError, match="expected"):
        ple.set_edges(np.zeros((2, 5)))


def test_ordinal_head_is_a_distribution_with_ordered_cumulatives():
    head = CumulativeLinkHead(4, 5)
    head.init_cuts(np.array([0, 0, 1, 2, 2, 2, 3, 4]))
    assert torch.all(torch.diff(head.cuts()) > 0)
    hidden = torch.randn(50, 4)
    proba = head(hidden).exp()
    np.testing.assert_allclose(proba.sum(1).detach().numpy(), 1, atol=1e-5)
    cdf = head.cumulative(hidden)
    assert torch.all(torch.diff(cdf, dim=1) >= 0)  # P(y <= k) grows with k
    # a larger location moves mass up: every cumulative probability falls
    with torch.no_grad():
        head.location.weight.fill_(0.0)
        low = head.cumulative(torch.zeros(1, 4))
        head.location.bias += 1.0
        high = head.cumulative(torch.zeros(1, 4))
    assert torch.all(high < low)


def test_module_options_are_validated():
    args = {"cardinalities": [3], "d_numerical": 4, "n_classes": 3}
    with pytest.raises(ValueError, match="head='tree'"):
        TabularMLP(**args, head="tree")
    with pytest.raises(ValueError, match="embed between"):
        TabularMLP(**args, ple=(5, 4, 2))
    with pytest.raises(ValueError, match="head"):
        DNNParams(head="tree")
    with pytest.raises(ValueError, match="schedule"):
        DNNParams(schedule="warm")


def _toy(n: int, seed: int) -> tuple[EncodedFeatures, np.ndarray]:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 6, (n, 1))
    numeric = rng.normal(size=(n, 2)).astype(np.float32)
    latent = 0.6 * (codes[:, 0] % 3) + numeric[:, 0] + rng.normal(0, 0.3, n)
    y = np.digitize(latent, [0.0, 1.0, 2.0])
    numeric[rng.random(n) < 0.1, 1] = np.nan
    return EncodedFeatures(codes, numeric), y


@pytest.mark.parametrize(
    "options",
    [
        {"head": "ordinal"},
        {"ple_bins": 8, "ple_dim": 4},
        {"head": "ordinal", "ple_bins": 8, "schedule": "onecycle"},
    ],
)
def test_options_learn_round_trip_and_match_the_numpy_path(options, tmp_path):
    X, y = _toy(1500, 0)
    Xv, yv = _toy(300, 1)
    params = DNNParams(max_epochs=8, batch_size=128, learning_rate=5e-3, **options)
    model = DNNModel(n_classes=4, cardinalities=[6], n_numerical=2, params=params)
    model.fit(X, y, eval_set=(Xv, yv), class_weight=np.ones(4))
    # every option reaches ~0.79 on these 300 rows (torch 2.13): 0.7 lies 3.8 binomial sds
    # (binomial_sd(0.79, 300) = 0.024) below, so only a model that did not learn fails
    assert max(h["val_accuracy"] for h in model.history_) > 0.7
    many = model.predict_logits(Xv)  # torch
    few = np.vstack([model.predict_logits(Xv.take(np.arange(i, i + 1))) for i in range(8)])
    np.testing.assert_allclose(few, many[:8], rtol=1e-4, atol=1e-4)
    model.save(tmp_path)
    again = DNNModel.load(tmp_path)
    np.testing.assert_allclose(again.predict_proba(Xv), model.predict_proba(Xv), atol=1e-12)
    if params.ple_bins:
        np.testing.assert_array_equal(again.module_.ple.edges, model.module_.ple.edges)


def test_boundaries_fall_between_classes_and_stay_increasing():
    latent = np.array([0.1, 0.4, 1.2, 1.6, np.nan, 3.0])
    y = np.array([0, 0, 1, 1, 2, 3])
    cuts = boundaries(latent, y, 5)  # class 2 has no latent; class 4 never seen
    assert cuts[0] == pytest.approx(0.8)
    assert np.all(np.diff(cuts) > 0)
    assert cuts[1] == pytest.approx(2.3)


def test_ordinal_head_tied_to_the_value_keeps_its_cuts_and_learns(tmp_path):
    X, y = _toy(1500, 2)
    Xv, yv = _toy(300, 3)
    values = np.exp(y + np.random.default_rng(0).uniform(0, 1, len(y)))  # classes = value bins
    params = DNNParams(max_epochs=6, batch_size=128, learning_rate=5e-3, head="ordinal",
                       aux_weight=1.0)  # fmt: skip
    model = DNNModel(n_classes=4, cardinalities=[6], n_numerical=2, params=params)
    model.fit(X, y, eval_set=(Xv, yv), values=values)
    head = model.module_.head
    assert model.module_.tied_aux and model.module_.aux_head is None
    np.testing.assert_allclose(
        head.cuts().detach().numpy(), boundaries(aux_target(values), y, 4), atol=1e-5
    )
    assert max(h["val_accuracy"] for h in model.history_) > 0.7
    model.save(tmp_path)
    np.testing.assert_allclose(DNNModel.load(tmp_path).predict_proba(Xv), model.predict_proba(Xv))


def test_choose_dnn_variant_keeps_the_best_on_validation_and_refuses_unknown_names():
    from scoutless.models.tuning import choose_dnn_variant, variant_params

    X, y = _toy(600, 4)
    Xv, yv = _toy(200, 5)
    base = DNNModel(n_classes=4, cardinalities=[6], n_numerical=2,
                    params=DNNParams(max_epochs=2, batch_size=128))  # fmt: skip
    model, log = choose_dnn_variant(
        base, X, y, eval_set=(Xv, yv), class_weight=None, variants=["reference", "ple"]
    )
    assert [r["variant"] for r in log] == ["reference", "ple"]
    scores = [r["val_accuracy"] + r["val_macro_f1"] for r in log]
    leader = log[int(np.argmax(scores))]
    chosen = next(r for r in log if r["variant"] == model.variant_)
    assert chosen["contender"] and leader["contender"]
    assert chosen["val_log_loss"] == min(r["val_log_loss"] for r in log if r["contender"])
    assert model.params == variant_params(base.params, model.variant_)
    with pytest.raises(ValueError, match="variant 'deep' unknown"):
        variant_params(base.params, "deep")


def _confident(y: np.ndarray, predicted: np.ndarray, p: float) -> np.ndarray:
    """Probabilities putting ``p`` on ``predicted`` and the rest evenly on 3 other classes."""
    proba = np.full((len(y), 4), (1 - p) / 3)
    proba[np.arange(len(y)), predicted] = p
    return proba


def test_a_lead_inside_the_noise_goes_to_the_better_log_loss_and_a_clear_lead_wins():
    from scoutless.models.tuning import pick_variant

    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 4000)
    right = y.copy()
    wrong = (y + 1) % 4
    # "sharp" is right on 80.5 % of rows but overconfident; "soft" on 80 % with honest odds
    sharp = np.where(rng.random(len(y)) < 0.805, right, wrong)
    soft = np.where(rng.random(len(y)) < 0.80, right, wrong)
    chosen, log = pick_variant(y, [_confident(y, sharp, 0.999), _confident(y, soft, 0.8)],
                               ["sharp", "soft"])  # fmt: skip
    assert [r["contender"] for r in log] == [True, True]
    assert log[1]["val_log_loss"] < log[0]["val_log_loss"] and chosen == 1
    # a lead of ten points is beyond any noise: the argmax score decides
    clear = np.where(rng.random(len(y)) < 0.90, right, wrong)
    chosen, log = pick_variant(y, [_confident(y, clear, 0.999), _confident(y, soft, 0.8)],
                               ["clear", "soft"])  # fmt: skip
    assert chosen == 0 and [r["contender"] for r in log] == [True, False]
    assert 0.001 < log[1]["lead_se"] < 0.02


def test_variants_are_compared_on_a_subsample_and_only_the_winner_sees_all_rows():
    from scoutless.models.tuning import choose_dnn_variant

    X, y = _toy(6400, 6)
    Xv, yv = _toy(3000, 7)
    base = DNNModel(n_classes=4, cardinalities=[6], n_numerical=2,
                    params=DNNParams(max_epochs=1))  # fmt: skip
    model, log = choose_dnn_variant(base, X, y, eval_set=(Xv, yv), class_weight=None,
                                    variants=["reference", "ple"], selection_rows=2000)  # fmt: skip
    assert [r["fit_rows"] for r in log] == [2000, 2000]
    assert [r["val_rows"] for r in log] == [2000, 2000]  # validated on a subsample too
    assert model.variant_ in ("reference", "ple")
    assert model.batch_size_ == 6400 // 32  # the refit saw all rows (2000 would get 64)


def test_ordinal_tail_probabilities_match_scipy_in_float32():
    """The head's class probabilities are accurate far into both tails (torch's float32
    ndtr is not), so the torch and numpy paths agree on rare classes too."""
    from scipy.special import ndtr

    from scoutless.models.ordinal import normal_cdf

    z = np.linspace(-5.2, 5.2, 4001)
    got = normal_cdf(torch.tensor(z, dtype=torch.float32)).double().numpy()
    np.testing.assert_allclose(got, ndtr(z), rtol=1e-5)
    head = CumulativeLinkHead(4, 4)
    with torch.no_grad():
        head.location.bias.fill_(4.9)  # far above every cut: the top class's rivals are ~1e-7
        log_p = head(torch.zeros(1, 4)).double().numpy()[0]
    cuts = head.cuts().detach().double().numpy()
    want = np.diff(np.concatenate([[0.0], ndtr(cuts - 4.9), [1.0]]))
    np.testing.assert_allclose(np.exp(log_p), np.maximum(want, 1e-7), rtol=1e-4)


@settings(max_examples=200, deadline=None)
@given(
    location=st.floats(-8, 8),
    log_scale=st.floats(-6, 6),
    gaps=st.lists(st.floats(0.01, 3), min_size=1, max_size=5),
    start=st.floats(-5, 5),
)
def test_ordinal_head_of_a_few_rows_equals_the_vectorised_pass(location, log_scale, gaps, start):
    """A single task's head runs on Python floats; it must give the numpy pass's
    probabilities, tails included (float32 rounding apart)."""
    from scoutless.fast_paths import current
    from scoutless.models import ordinal_inference as ordinal

    cuts = (start + np.cumsum(gaps)).astype(np.float32)
    loc = np.full(current().head_rows + 1, location, np.float32)
    scale = np.full(current().head_rows + 1, log_scale, np.float32)
    vectorised = ordinal.cumulative_link_log_proba(loc, scale, cuts)
    rows = ordinal.cumulative_link_log_proba(loc[:2], scale[:2], cuts)
    assert rows.shape == (2, len(cuts) + 1) and rows.dtype == vectorised.dtype
    np.testing.assert_allclose(np.exp(rows), np.exp(vectorised[:2]), rtol=2e-5, atol=1e-7)
    assert ordinal.cumulative_link_log_proba(loc[:0], scale[:0], cuts).shape == (0, len(cuts) + 1)
