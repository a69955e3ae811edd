"""Step 5b of training: the champion's served rule (:mod:`scoutless.models.guard`).

Fitted on validation rows only. On a time split those rows are the latest of the training
period (:func:`scoutless.history.splits.forward_parts`); the prior and the macro-F1
offsets are then fitted on their earlier half and the rule is chosen on the later half:
each step is judged on rows it has not seen, one step ahead, as it will serve, and the
rule must win robustly over time blocks of those rows (``Settings.history.guard_*``).

The probabilities it is fitted on are the model's as it will serve: where the served model
is a refit on the latest rows, the later half is predicted by a refit on the fit rows and
the earlier half (``FamilyTrainer.guard_proba``), one step ahead of what it learned, as
the refit is of the period it serves. The calibration rows stay untouched: they hold the
risk policy's conformal bound.
"""

from __future__ import annotations

import numpy as np

from scoutless.config import HistorySettings
from scoutless.evaluation.baselines import majority_class
from scoutless.features.encoders import FeatureEncoder
from scoutless.models.guard import (
    RobustSelection,
    ServingGuard,
    baseline_classes,
    baseline_feature_columns,
    fit_guard,
    time_halves,
)
from scoutless.training.fitting import TargetData


def fit_target_guard(
    data: TargetData, encoder: FeatureEncoder, champion: str, val_proba: np.ndarray,
    settings: HistorySettings,
) -> ServingGuard | None:  # fmt: skip
    """The served rule of ``champion`` from its validation probabilities as served; None
    without a baseline input or with fewer than ``Settings.history.guard_min_rows``
    validation rows. ``data.val_order`` (None: not time-ordered) splits the rows."""
    X_val, y_val = data.validation
    baselines = {
        name: baseline_classes(X_val, encoder, column, data.n_classes)
        for name, column in baseline_feature_columns(data.target).items()
        if column in encoder.categorical
    }
    if not baselines or len(y_val) < settings.guard_min_rows:
        return None
    val_order = data.val_order
    tune, select = time_halves(val_order, len(y_val))
    prior = np.bincount(y_val[tune], minlength=data.n_classes) / max(int(tune.sum()), 1)
    robust = RobustSelection(
        settings.guard_lower_quantile, settings.guard_blocks, settings.guard_resamples
    )
    return fit_guard(
        data.target, champion, y_val[select], val_proba[select],
        {name: classes[select] for name, classes in baselines.items()},
        recent_prior=prior, majority=majority_class(data.y["fit"], data.n_classes),
        tune=(y_val[tune], val_proba[tune]),
        order=None if val_order is None else val_order[select], robust=robust,
    )  # fmt: skip
