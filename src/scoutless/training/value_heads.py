"""Step 4b of training: each target's value model and its conformal calibration.

The value model is cross-fitted on the fit and validation parts
(``Settings.training.value_folds``, in blocks of time on a time split: its scale on the
out-of-fold residuals; its location a ridge and trees on what it leaves, ``value_linear``); the
calibration part, which no fold saw, gives the scores that make the (1 - alpha) value
under-allocate at most alpha (``ConformalLevels``).
"""

from __future__ import annotations

import numpy as np

from scoutless.allocation.values import ConformalLevels
from scoutless.config import TrainingSettings
from scoutless.history.table import TrainingTable
from scoutless.models.value_model import LogValueModel
from scoutless.targets.spec import value_col
from scoutless.training.fitting import TargetData


def fit_value_head(
    table: TrainingTable, data: TargetData, *, n_jobs: int | None, seed: int,
    settings: TrainingSettings,
) -> tuple[LogValueModel, np.ndarray]:  # fmt: skip
    """The target's value model and its calibration rows' sorted scores."""
    values = table.frame[value_col(data.target)].to_numpy(dtype=float)
    part = {p: values[rows] for p, rows in data.rows.items()}
    model = LogValueModel(
        folds=settings.value_folds, linear=settings.value_linear, n_jobs=n_jobs, seed=seed
    ).fit(
        data.X["fit"], part["fit"], eval_set=(data.X["validation"], part["validation"]),
        order=None if data.fit_order is None or data.val_order is None
        else (data.fit_order, data.val_order),
    )  # fmt: skip
    calibration = model.predict_dist(data.X["calibration"])
    return model, ConformalLevels.fit(calibration, part["calibration"]).scores


def fit_value_heads(
    table: TrainingTable, datas: dict[str, TargetData], *, n_jobs: int | None, seed: int,
    settings: TrainingSettings,
) -> dict[str, tuple[LogValueModel, np.ndarray]]:  # fmt: skip
    """:func:`fit_value_head` for every target."""
    return {
        t: fit_value_head(table, d, n_jobs=n_jobs, seed=seed, settings=settings)
        for t, d in datas.items()
    }
