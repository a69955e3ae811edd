"""Training's value head: cross-fitted over ``Settings.training.value_folds`` folds of the
fit and validation parts, its conformal scores from the calibration part alone."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from scoutless.config import TrainingSettings
from scoutless.features.encoded import EncodedFeatures
from scoutless.training.fitting import TargetData
from scoutless.training.value_heads import fit_value_head


def _data(n: int = 240) -> tuple[SimpleNamespace, TargetData]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=n)
    values = np.expm1(4.0 + x + 0.3 * rng.normal(size=n))
    encoded = EncodedFeatures(np.ones((n, 1), np.int64), x[:, None].astype(np.float32))
    rows = {
        "fit": np.arange(0, 120),
        "validation": np.arange(120, 180),
        "calibration": np.arange(180, n),
    }
    data = TargetData(
        target="memory", n_classes=2, X={p: encoded.take(r) for p, r in rows.items()},
        y={p: np.zeros(len(r), np.int64) for p, r in rows.items()}, rows=rows,
        class_weight=np.ones(2), values=values[rows["fit"]],
    )  # fmt: skip
    return SimpleNamespace(frame=pd.DataFrame({"memory_value": values})), data


def _fit_with(**training):  # type: ignore[no-untyped-def]
    """The value head fitted on the small data under these training settings."""
    table, data = _data()
    settings = TrainingSettings(**training)
    return fit_value_head(table, data, n_jobs=1, seed=0, settings=settings)  # type: ignore[arg-type]


def test_the_value_head_takes_its_folds_from_the_settings():
    model, scores = _fit_with(value_folds=3)
    assert len(model.fold_rounds_) == 3
    assert len(scores) == 60 and np.all(np.diff(scores) >= 0)  # the calibration rows, sorted


def test_the_ridge_start_can_be_switched_off_in_the_settings():
    model, _ = _fit_with(value_linear=False)
    assert model.linear_ is None and not model.linear


def test_on_a_time_split_the_value_heads_folds_are_blocks_of_time(monkeypatch):
    """The parts' time order reaches the folds (``TargetData.fit_order``/``val_order``);
    without it (a random split) the folds stay seeded at random."""
    import scoutless.models.value_model as value_model

    made, fold_of = [], value_model.fold_of

    def spy(n, folds, seed, order=None):
        made.append(fold_of(n, folds, seed, order))
        return made[-1]

    monkeypatch.setattr(value_model, "fold_of", spy)
    table, data = _data()
    time = np.random.default_rng(1).permutation(180).astype(float)
    timed = TargetData(**{**vars(data), "fit_order": time[:120], "val_order": time[120:]})
    fit_value_head(table, timed, n_jobs=1, seed=0, settings=TrainingSettings())  # type: ignore[arg-type]
    assert np.all(np.diff(made[-1][np.argsort(time)]) >= 0)
    fit_value_head(table, data, n_jobs=1, seed=0, settings=TrainingSettings())  # type: ignore[arg-type]
    assert np.any(np.diff(made[-1]) < 0)
