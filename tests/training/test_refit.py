"""The served XGBoost model is refitted on every part's rows: it learns the latest rows."""

from __future__ import annotations

import numpy as np

from scoutless.config import Settings, TrainingSettings
from scoutless.features.encoders import EncodedFeatures, FeatureEncoder
from scoutless.models.base import balanced_class_weight
from scoutless.models.dnn_params import DNNParams
from scoutless.training import fitting
from scoutless.training.fitting import FamilyTrainer, TargetData, training_progress

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
    return TargetData("walltime", 2, X, y, rows, balanced_class_weight(y["fit"], 2), y["fit"])


def _trainer() -> FamilyTrainer:
    return FamilyTrainer(encoder=FeatureEncoder([]), trials=0, seed=0, n_jobs=1, xgb_grid=None,
                         dnn_params=DNNParams(), progress=training_progress(False))  # fmt: skip


# x = 0.5 at the latest time: class 1 by the fit part's rule, 0 by the recent one
RECENT = EncodedFeatures(np.zeros((1, 0), np.int64), np.array([[0.5, 0.95]], np.float32))


def test_the_refit_learns_what_only_the_latest_rows_show():
    data, trainer = _drifting(600, 0), _trainer()
    held_out, _ = trainer.fit("xgb", data)
    served, record = trainer.refit(held_out, data)
    assert held_out.predict_proba(RECENT).argmax() == 1  # never saw the later rows
    assert served.predict_proba(RECENT).argmax() == 0
    assert record["refit"]["rows"] == 3 * 600
    scaled = round((held_out.best_iteration_ + 1) * 3)
    assert record["refit"]["trees"] == served.n_estimators == scaled


def test_refit_off_serves_the_held_out_fit(monkeypatch):
    off = Settings(training=TrainingSettings(refit_all_rows=False))
    monkeypatch.setattr(fitting, "get_settings", lambda: off)
    data, trainer = _drifting(300, 1), _trainer()
    held_out, _ = trainer.fit("xgb", data)
    assert trainer.refit(held_out, data) == (held_out, {})
