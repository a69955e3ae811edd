import json
import math

import numpy as np
import pytest

from scoutless.evaluation.metrics import (
    classification_metrics,
    pipeline_metrics,
)
from scoutless.jsonsafe import json_edges, json_number
from scoutless.targets.bins import TargetBins

LABELS = ["low", "mid", "high"]


def test_classification_metrics_by_hand():
    y_true = np.array([0, 0, 1, 1, 1, 2])
    y_pred = np.array([0, 1, 1, 1, 0, 1])
    m = classification_metrics(y_true, y_pred, LABELS)
    assert m["accuracy"] == pytest.approx(3 / 6)
    assert m["confusion"] == [[1, 1, 0], [1, 2, 0], [0, 1, 0]]
    low, mid, high = m["per_class"]
    assert (low["label"], low["precision"], low["recall"], low["support"]) == ("low", 0.5, 0.5, 2)
    assert mid["precision"] == pytest.approx(2 / 4) and mid["recall"] == pytest.approx(2 / 3)
    assert high == {"label": "high", "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    f1_mid = 2 * 0.5 * (2 / 3) / (0.5 + 2 / 3)
    assert m["macro_f1"] == pytest.approx((0.5 + f1_mid + 0.0) / 3)
    assert m["weighted_f1"] == pytest.approx((2 * 0.5 + 3 * f1_mid) / 6)


def test_absent_class_keeps_its_row_and_column():
    m = classification_metrics(np.array([0, 0]), np.array([0, 0]), LABELS)
    assert np.array(m["confusion"]).shape == (3, 3)
    assert [c["support"] for c in m["per_class"]] == [2, 0, 0]


def test_out_of_range_class_is_refused_with_its_name():
    with pytest.raises(ValueError, match=r"y_pred holds classes outside 0\.\.2"):
        classification_metrics(np.array([0, 1]), np.array([0, 3]), LABELS)
    with pytest.raises(ValueError, match="shape"):
        classification_metrics(np.array([0, 1]), np.array([0]), LABELS)


def test_no_rows_gives_nulls_not_nan():
    m = classification_metrics(np.array([], int), np.array([], int), LABELS)
    assert m["accuracy"] is None and m["n"] == 0
    json.dumps(m, allow_nan=False)


def test_pipeline_metrics_by_hand():
    correct = {
        "memory": np.array([True, True, False, False]),
        "cputime": np.array([True, False, False, True]),
        "io": np.array([True, True, False, True]),
        "walltime": np.array([True, True, False, False]),
    }
    p = pipeline_metrics(correct)
    assert p["exact_match"] == pytest.approx(1 / 4)
    assert p["at_least"] == {"1": 0.75, "2": 0.75, "3": 0.5, "4": 0.25}
    assert p["mean_accuracy"] == pytest.approx(9 / 16)


def test_pipeline_refuses_misaligned_rows():
    with pytest.raises(ValueError, match="different rows"):
        pipeline_metrics({"memory": np.ones(3, bool), "io": np.ones(2, bool)})


def test_json_numbers_and_edges_read_back_as_bins():
    assert json_number(math.nan) is None and json_number(None) is None
    assert json_number(math.inf) == "inf" and json_number(-math.inf) == "-inf"
    edges = (0.0, 500.0, math.inf)
    written = json.loads(json.dumps(json_edges(edges), allow_nan=False))
    assert written == [0.0, 500.0, "inf"]
    back = TargetBins.from_dict({"target": "io", "edges": written, "labels": ["low", "high"]})
    assert back.edges == edges
