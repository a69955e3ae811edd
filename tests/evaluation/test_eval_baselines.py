import numpy as np
import pandas as pd
import pytest

from scoutless.evaluation.baselines import (
    PANDA_HISTORY_KEYS,
    HistoryLookup,
    column_baselines,
    column_predictions,
    history_keys,
    majority_class,
)
from scoutless.features.spec import PANDA_FEATURES, FeatureSpec


def test_majority_ignores_missing_and_breaks_ties_upwards():
    assert majority_class(np.array([0, 0, 2, 2, 1, -1, -1, -1]), 3) == 2
    assert majority_class(np.array([1, 1, 0]), 3) == 1
    with pytest.raises(ValueError, match="no training row"):
        majority_class(np.array([-1, -1]), 3)


def test_history_keys_for_panda_and_other_sources():
    assert history_keys(list(PANDA_FEATURES)) == PANDA_HISTORY_KEYS
    slurm = [
        FeatureSpec("req_mem", "numerical"),
        FeatureSpec("user", "categorical"),
        FeatureSpec("partition", "categorical"),
        FeatureSpec("executable", "categorical"),
    ]
    assert history_keys(slurm) == (("user", "partition"), ("user",))
    assert history_keys(slurm[:2]) == (("user",),)
    assert history_keys(slurm[:1]) == ()


TRAIN = pd.DataFrame(
    {
        "processingtype": ["simul", "simul", "simul", "simul", "reco", "reco", "reco", None],
        "transpath": [
            "Sim_tf",
            "Sim_tf",
            "Sim_tf",
            "AtlasG4",
            "Reco_tf",
            "Reco_tf",
            "Reco_tf",
            "x",
        ],
    }
)
Y_TRAIN = np.array([3, 3, 1, 2, 0, 0, 0, 1])


def test_history_uses_finest_group_then_falls_back():
    lookup = HistoryLookup(PANDA_HISTORY_KEYS, n_classes=4).fit(TRAIN, Y_TRAIN)
    test = pd.DataFrame(
        {
            "processingtype": ["simul", "simul", "simul", "evgen", None],
            "transpath": ["Sim_tf", "AtlasG4", "NewTf", "Gen_tf", "x"],
        }
    )
    pred = lookup.predict(test)
    # exact group; exact group; processingtype only (simul: 3,3,1,2 -> 3); global (0); missing key
    assert pred.tolist() == [3, 2, 3, 0, 1]


def test_history_ignores_rows_without_class_and_needs_fit():
    lookup = HistoryLookup((("processingtype",),), n_classes=4)
    with pytest.raises(RuntimeError, match="before fit"):
        lookup.predict(TRAIN)
    y = Y_TRAIN.copy()
    y[:2] = -1  # the two class-3 simul rows are unlabelled
    lookup.fit(TRAIN, y)
    assert lookup.predict(TRAIN.iloc[[0]]).tolist() == [2]  # simul: 1, 2 -> tie -> larger


def test_history_without_keys_is_the_majority():
    lookup = HistoryLookup((), n_classes=4).fit(TRAIN, Y_TRAIN)
    assert lookup.predict(TRAIN).tolist() == [0] * len(TRAIN)


def test_column_baselines_are_found_by_name():
    frame = pd.DataFrame(
        columns=[
            "memory_class", "memory_scout_class", "memory_last2_class",
            "memory_user_request_class", "memory_bayes_confidence", "walltime_scout_class",
        ]
    )  # fmt: skip
    found = {b.name: b.column for b in column_baselines(frame, "memory")}
    assert found == {
        "scouts": "memory_scout_class",
        "last2": "memory_last2_class",
        "user_request": "memory_user_request_class",
    }


def test_column_predictions_fill_missing_with_fallback():
    frame = pd.DataFrame({"c": [0, 2, -1, None, 7]})
    pred, coverage = column_predictions(frame, "c", n_classes=4, fallback=1)
    assert pred.tolist() == [0, 2, 1, 1, 1]
    assert coverage == pytest.approx(2 / 5)
