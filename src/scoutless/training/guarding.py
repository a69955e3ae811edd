"""Step 5b of training: the champion's served rule (:mod:`scoutless.models.guard`).

Fitted on validation rows only. On a time split those rows are the latest of the training
period (:func:`scoutless.history.splits.forward_parts`); the prior and the macro-F1
offsets are then fitted on their earlier half and the rule is chosen on the later half:
each step is judged on rows it has not seen, one step ahead, as it will serve, and the
rule must win robustly over time blocks of those rows (``Settings.history.guard_*``).
"""

from __future__ import annotations

import numpy as np

from scoutless.config import get_settings
from scoutless.evaluation.baselines import majority_class
from scoutless.features.encoders import FeatureEncoder
from scoutless.models.guard import (
    RobustSelection,
    ServingGuard,
    baseline_classes,
    baseline_feature_columns,
    fit_guard,
)
from scoutless.training.fitting import TargetData


def fit_target_guard(
    data: TargetData,
    encoder: FeatureEncoder,
    champion: str,
    val_proba: np.ndarray,
    val_order: np.ndarray | None,
) -> ServingGuard | None:
    """The served rule of ``champion``; None without a baseline input or with fewer than
    ``Settings.history.guard_min_rows`` validation rows. ``val_order``: the validation
    rows' time order (None: not time-ordered, all rows tune and choose)."""
    X_val, y_val = data.validation
    baselines = {
        name: baseline_classes(X_val, encoder, column, data.n_classes)
        for name, column in baseline_feature_columns(data.target).items()
        if column in encoder.categorical
    }
    if not baselines or len(y_val) < get_settings().history.guard_min_rows:
        return None
    select = np.ones(len(y_val), dtype=bool)
    tune = select
    if val_order is not None:
        select = val_order >= np.median(val_order)
        tune = ~select if (~select).any() else select
    prior = np.bincount(y_val[tune], minlength=data.n_classes) / max(int(tune.sum()), 1)
    settings = get_settings().history
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
