"""On a time split the served XGBoost model is refitted on the fit and validation rows: it
learns the latest rows, and the calibration rows stay unseen by what is served."""

from __future__ import annotations

import numpy as np

from scoutless.features.encoded import EncodedFeatures
from scoutless.features.encoders import FeatureEncoder
from scoutless.models.base import balanced_class_weight
from scoutless.models.dnn_params import DNNParams
from scoutless.training.fitting import FamilyTrainer, TargetData, training_progress
from scoutless.training.run import fit_family
from spread import MARGIN_SD, paired_gap_sd

PARTS = {"fit": (0.0, 0.7), "validation": (0.7, 1.0), "calibration": (0.7, 1.0)}


def _drifting(n: int, seed: int) -> TargetData:
    """Columns (x, time): class ``x > 0.3`` in the fit part (earliest times), ``x > 0.7``
    in the later parts, as when users' jobs change after the fit window."""
    rng = np.random.default_rng(seed)
    X, y, rows = {}, {}, {}
    for i, (part, (start, end)) in enumerate(PARTS.items()):
        x = rng.random(n)
        t = rng.uniform(start, end, n)
        X[part] = EncodedFeatures(np.zeros((n, 0), np.int64), np.c_[x, t].astype(np.float32))
        y[part] = (x > (0.3 if part == "fit" else 0.7)).astype(np.int64)
        rows[part] = np.arange(n) + i * n
    order = X["validation"].numeric[:, 1].argsort().argsort().astype(float)  # time rank
    return TargetData("walltime", 2, X, y, rows, balanced_class_weight(y["fit"], 2), y["fit"],
                      val_order=order)  # fmt: skip


def _trainer(refit_latest: bool = True) -> FamilyTrainer:
    return FamilyTrainer(encoder=FeatureEncoder([]), trials=0, seed=0, n_jobs=1, xgb_grid=None,
                         dnn_params=DNNParams(), progress=training_progress(False),
                         refit_latest=refit_latest)  # fmt: skip


# x = 0.5 at the latest time: class 1 by the fit part's rule, 0 by the recent one
RECENT = EncodedFeatures(np.zeros((1, 0), np.int64), np.array([[0.5, 0.95]], np.float32))


def test_the_refit_learns_what_only_the_latest_rows_show():
    data, trainer = _drifting(600, 0), _trainer()
    held_out, _ = trainer.fit("xgb", data)
    served, record = trainer.refit(held_out, data)
    assert held_out.predict_proba(RECENT).argmax() == 1  # never saw the later rows
    assert served.predict_proba(RECENT).argmax() == 0
    assert record["refit"]["rows"] == 2 * 600  # fit and validation, not calibration
    scaled = round((held_out.best_iteration_ + 1) * 2)
    assert record["refit"]["trees"] == served.n_estimators == scaled


def test_without_a_time_split_the_held_out_fit_is_served():
    data, trainer = _drifting(300, 1), _trainer(refit_latest=False)
    held_out, _ = trainer.fit("xgb", data)
    assert trainer.refit(held_out, data) == (held_out, {})


def test_calibration_probabilities_are_the_served_models_on_rows_it_never_saw():
    """The risk policy's bound needs calibration scores of the model that is served, on
    rows it was not fitted on: the refit's, not the held-out fit's."""
    data = _drifting(400, 2)
    fit = fit_family(_trainer(), data, "xgb", ("small", "large"))
    served_cal = fit.model.predict_proba(data.X["calibration"])
    np.testing.assert_array_equal(fit.calibration_set[0], served_cal)
    assert fit.hyperparameters["refit"]["rows"] == len(data.y["fit"]) + len(data.y["validation"])
    # validation figures stay the held-out fit's: they differ from the refit's on this drift
    assert not np.array_equal(fit.validation_proba, fit.model.predict_proba(data.validation[0]))


def test_the_guard_sees_the_later_validation_half_as_a_refit_would_serve_it():
    """The guard chooses its rule on the later half of validation; those rows are predicted
    by a refit on the fit rows and the earlier half, as the served refit predicts the next
    period, and the earlier half (where the prior and offsets are tuned) stays held out."""
    data, trainer = _drifting(800, 3), _trainer()
    held_out, _ = trainer.fit("xgb", data)
    val_proba = held_out.predict_proba(data.validation[0])
    guard_proba, record = trainer.guard_proba(held_out, data, val_proba)
    later = data.val_order >= np.median(data.val_order)
    np.testing.assert_array_equal(guard_proba[~later], val_proba[~later])
    y_later = data.validation[1][later]
    forward_right = guard_proba[later].argmax(axis=1) == y_later
    held_out_right = val_proba[later].argmax(axis=1) == y_later
    # it learned the latest rule from the earlier half: better by MARGIN_SD sds of the
    # paired difference on these rows (0.84 against 0.64 on 400 rows, margin ~0.09)
    margin = MARGIN_SD * paired_gap_sd(forward_right, held_out_right)
    assert forward_right.mean() > held_out_right.mean() + margin
    assert record["guard_refit"]["rows"] == len(data.y["fit"]) + int((~later).sum())


def test_without_a_time_order_the_guard_takes_the_held_out_probabilities():
    data = _drifting(300, 4)
    unordered = TargetData(data.target, 2, data.X, data.y, data.rows, data.class_weight,
                           data.values)  # fmt: skip
    for trainer, d in ((_trainer(), unordered), (_trainer(refit_latest=False), data)):
        held_out, _ = trainer.fit("xgb", d)
        val_proba = held_out.predict_proba(d.validation[0])
        assert trainer.guard_proba(held_out, d, val_proba) == (val_proba, {})
