"""The latent truth: calibrated against the computed targets, and not beaten by a model."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr
from sklearn.ensemble import HistGradientBoostingClassifier
from synthetic_helpers import features_of, targets_of
from threadpoolctl import threadpool_limits

from scoutless.config import WithinTaskSettings
from scoutless.features.extract import CATEGORICAL
from scoutless.history.synthetic import bayes_probabilities, generate_chunk
from scoutless.targets.bins import TargetBins, load_bins
from spread import MARGIN_SD, paired_gap_sd

TARGETS = ["memory", "cputime", "io", "walltime"]


@pytest.fixture(scope="module")
def run():
    """Tasks with targets only: the 1-2 job tail and broken tasks have none to check."""
    frames = generate_chunk(4000, seed=11)
    values = targets_of(frames)
    has = values[TARGETS].notna().all(axis=1).to_numpy()
    truth = frames.truth.set_index("jeditaskid").loc[frames.tasks["jeditaskid"]]
    return frames, truth[has], values[has], has


def test_only_tiny_and_broken_tasks_lack_targets(run) -> None:
    frames, _, _, has = run
    truth = frames.truth.set_index("jeditaskid").loc[frames.tasks["jeditaskid"]]
    broken = frames.tasks["status"].eq("broken").to_numpy()
    tiny = truth["n_units"].to_numpy() < 3
    assert (~has == (tiny | broken)).all()
    assert 0.05 <= tiny.mean() <= 0.11 and 0 < broken.mean() < 0.01


def _pit(truth, values, target):  # type: ignore[no-untyped-def]
    """P(value <= observed | features): uniform when the truth matches the targets."""
    above = values[target].to_numpy() - truth[f"{target}_offset"].to_numpy()
    z = (np.log(above) - truth[f"{target}_mu"].to_numpy()) / truth[f"{target}_sigma"].to_numpy()
    return ndtr(z)


@pytest.mark.parametrize("target", ["memory", "cputime", "io", "walltime"])
def test_truth_distribution_matches_computed_targets_in_every_family(run, target) -> None:
    _frames, truth, values, _ = run
    pit = _pit(truth, values, target)
    assert np.isfinite(pit).all()
    for family, rows in truth.groupby("family").indices.items():
        deciles = np.histogram(pit[rows], bins=10, range=(0, 1))[0] / len(rows)
        tol = 0.06 + 2.5 / np.sqrt(len(rows))
        assert np.abs(deciles - 0.1).max() < tol, (target, family, deciles.round(3))


def test_bayes_probabilities_are_calibrated_for_other_bins(run) -> None:
    _, truth, values, _ = run
    bins = {"memory": TargetBins("memory", "MB", (0, 1500, 3000, np.inf), ("a", "b", "c"))}
    proba = bayes_probabilities(truth, bins)["memory"]
    assert proba.shape == (len(truth), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    observed = bins["memory"].classify(values["memory"].to_numpy())
    expected = proba.mean(axis=0)
    share = np.bincount(observed, minlength=3) / len(observed)
    np.testing.assert_allclose(share, expected, atol=0.02)


def test_bayes_accuracy_is_in_the_learnable_band_and_not_beaten_by_a_model(run) -> None:
    frames, truth, values, has = run
    features = features_of(frames)[has]
    X = features.copy()
    for name in CATEGORICAL:  # sorted codes; release names sort by patch number
        X[name] = X[name].astype("category").cat.codes
    small = [c for c in CATEGORICAL if X[c].nunique() <= 250]  # the rest stay ordinal
    n_train = int(0.75 * len(X))
    for target, bins in load_bins().items():
        y = bins.classify(values[target].to_numpy())
        bayes = bayes_probabilities(truth, {target: bins})[target].argmax(axis=1)
        bayes_acc = (bayes[n_train:] == y[n_train:]).mean()
        model = HistGradientBoostingClassifier(
            max_iter=60, learning_rate=0.15, categorical_features=small, random_state=0
        )
        with threadpool_limits(1):
            model.fit(X.iloc[:n_train], y[:n_train])
        model_right = model.predict(X.iloc[n_train:]) == y[n_train:]
        model_acc = model_right.mean()
        # on the same rows a model can beat the Bayes classes by luck only: by at most
        # MARGIN_SD sds of the paired difference (the rows where one of them is right)
        margin = MARGIN_SD * paired_gap_sd(model_right, bayes[n_train:] == y[n_train:])
        assert 0.7 <= bayes_acc <= 0.96, (target, bayes_acc)
        assert model_acc <= bayes_acc + margin, (target, model_acc, bayes_acc, margin)
        assert model_acc >= bayes_acc - 0.25, (target, model_acc, bayes_acc)  # learnable


def test_release_drift_raises_memory_and_cpu_of_new_release_tasks() -> None:
    drift_start = datetime(2024, 7, 1)
    frames = generate_chunk(3000, seed=4, scenario="release_drift", drift_start=drift_start)
    truth = frames.truth.set_index("jeditaskid").loc[frames.tasks["jeditaskid"]]
    values = targets_of(frames)
    tasks = frames.tasks.set_index("jeditaskid")
    drifted = truth["drifted"].eq(1).to_numpy()
    assert drifted.any()
    assert (tasks["creationdate"].to_numpy()[drifted] >= np.datetime64(drift_start)).all()
    assert tasks.loc[drifted, "transuses"].str.startswith("Atlas-25.0").all()
    # same families before vs after: memory and cputime clearly higher after the drift
    before = (~drifted) & truth["family"].isin(["simul", "pile", "reco", "deriv"]).to_numpy()
    before &= tasks["creationdate"].to_numpy() < np.datetime64(drift_start)
    for target, factor in (("memory", 1.4), ("cputime", 1.25)):
        ratio = np.nanmedian(values[target][drifted]) / np.nanmedian(values[target][before])
        assert ratio > factor, (target, ratio)
    # a run without the scenario has no new release
    plain = generate_chunk(1000, seed=4)
    assert not plain.tasks["transuses"].fillna("").str.startswith("Atlas-25.0").any()


def test_within_task_mechanisms_leave_the_learnable_part_unchanged() -> None:
    """Switching every within-task mechanism off leaves features and the truth of memory,
    io and walltime exactly as they were: scouts err more, the targets do not move. cputime's
    truth follows the job shapes it is calibrated on (its PIT test above checks it)."""
    off = WithinTaskSettings(
        scout_capped_input_share=0, avalanche_resize_share=0, slots_mean=0,
        early_slot_share=0, slot_speed_sigma=0, site_speed_sigma=0, outlier_share=0,
        bad_early_site_share=0, scout_abort_share=0, memory_events_exponent=0,
    )  # fmt: skip
    plain, real_like = generate_chunk(1000, seed=3, within=off), generate_chunk(1000, seed=3)
    pd.testing.assert_frame_equal(features_of(plain), features_of(real_like))
    columns = [f"{t}_{p}" for t in ("memory", "io", "walltime") for p in ("mu", "sigma", "offset")]
    pd.testing.assert_frame_equal(plain.truth[columns], real_like.truth[columns])
    a, b = targets_of(plain), targets_of(real_like)
    has = a.notna().all(axis=1) & b.notna().all(axis=1)
    for target in ("memory", "walltime", "io"):
        np.testing.assert_allclose(a.loc[has, target], b.loc[has, target], rtol=0.02)
    assert not plain.jobs["jobstatus"].eq("failed").groupby(plain.jobs["jeditaskid"]).all().any()
