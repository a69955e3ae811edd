import json
from pathlib import Path

import numpy as np
import pytest
from eval_fakes import FakePredictor, make_table
from rich.console import Console

from scoutless.evaluation.evaluate import EvaluationError, evaluate_bundle
from scoutless.evaluation.tables import headline_table, models_table, pipeline_table, policies_table
from scoutless.history.table import TrainingTable
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import TARGET_NAMES, class_col


def _strict_json(path: Path) -> dict:
    def refuse(token: str):
        raise AssertionError(f"{path} holds {token}, which is not JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_writes_strict_json_with_the_documented_keys(evaluated, table):
    _metrics, out = evaluated
    assert (out / "report.html").stat().st_size > 10_000
    written = _strict_json(out / "metrics.json")
    assert written["dataset"] == {
        "rows_train": int((table.frame["split_random"] == "train").sum()),
        "rows_test": int((table.frame["split_random"] == "test").sum()),
        "source": "synthetic-test",
        "split": "random",
    }
    assert set(written["targets"]) == set(TARGET_NAMES)
    memory = written["targets"]["memory"]
    assert memory["classes"] == list(table.bins["memory"].labels)
    assert memory["edges"] == [0.0, 1000.0, 2000.0, 4000.0, "inf"]
    assert set(memory["models"]) == {"xgb", "dnn", "majority", "history", "scouts", "bayes"}
    for entry in memory["models"].values():
        assert {"accuracy", "macro_f1", "weighted_f1", "per_class", "confusion"} <= set(entry)
        assert sum(c["support"] for c in entry["per_class"]) == written["dataset"]["rows_test"]
        assert np.array(entry["confusion"]).sum() == written["dataset"]["rows_test"]
    for name in ("argmax", "safe", "risk"):
        policy = memory["policies"][name]
        assert {"model", "accuracy", "under_allocation_rate", "over_allocation_median",
                "over_allocation_p90", "alpha", "tau"} <= set(policy)  # fmt: skip
        assert policy["model"] == "xgb"
    assert set(written["pipeline"]) >= {"xgb", "dnn", "majority", "history", "scouts", "champion"}
    assert set(written["pipeline"]["xgb"]["at_least"]) == {"1", "2", "3", "4"}


def test_figures_agree_with_the_table(evaluated, table):
    metrics, _ = evaluated
    test = table.frame[table.frame["split_random"] == "test"]
    memory = metrics["targets"]["memory"]["models"]
    assert memory["bayes"]["accuracy"] == pytest.approx(
        (test["memory_bayes_class"] == test["memory_class"]).mean()
    )
    assert memory["scouts"]["wait_hours_median"] == pytest.approx(test["scout_wait_hours"].median())
    assert 0.9 < memory["scouts"]["coverage"] < 1.0
    # the fake xgb is informative, majority is not; history follows processing type
    assert (
        memory["xgb"]["accuracy"] > memory["history"]["accuracy"] > memory["majority"]["accuracy"]
    )
    # ECE of the model's test probabilities, by hand: |accuracy - confidence| per bin
    proba = FakePredictor(table).predict_proba(test[table.feature_names], ["memory"], "xgb")
    proba = proba["memory"]
    bins = np.clip(np.ceil(proba.max(axis=1) * 15).astype(int) - 1, 0, 14)  # (k/15, (k+1)/15]
    hit = proba.argmax(axis=1) == test["memory_class"].to_numpy()
    gaps = [abs(hit[bins == b].mean() - proba.max(axis=1)[bins == b].mean()) * (bins == b).sum()
            for b in np.unique(bins)]  # fmt: skip
    ece = metrics["targets"]["memory"]["calibration"]["xgb"]["ece"]
    assert ece == pytest.approx(sum(gaps) / len(test)) and ece > 0.001
    # pipeline exact match: all four right on the same row
    hits = np.ones(len(test), bool)
    for t in TARGET_NAMES:
        hits &= test[f"{t}_bayes_class"].to_numpy() == test[class_col(t)].to_numpy()
    assert metrics["pipeline"]["bayes"]["exact_match"] == pytest.approx(hits.mean())


def test_rich_tables_render(evaluated):
    metrics, _ = evaluated
    console = Console(record=True, width=200)
    console.print(headline_table(metrics))
    console.print(models_table(metrics, "io"))
    console.print(policies_table(metrics))
    console.print(pipeline_table(metrics))
    text = console.export_text()
    for word in ("memory", "walltime", "scouts", "history", "bayes", "risk", "exact match"):
        assert word in text


@pytest.fixture
def no_report(monkeypatch):
    """Skip drawing the HTML report where a test reads only the metrics."""
    monkeypatch.setattr("scoutless.evaluation.evaluate.write_report", lambda metrics, path: path)


def test_rows_without_a_class_are_left_out(tmp_path, no_report):
    table = make_table(n=300, seed=5, bayes=False, targets=("memory", "cputime"))
    frame = table.frame.copy()
    test_rows = np.flatnonzero(frame["split_random"] == "test")
    frame.loc[frame.index[test_rows[:10]], "cputime_class"] = -1
    table = TrainingTable(frame, table.features, table.bins, source="t")
    metrics = evaluate_bundle(FakePredictor(table), table, tmp_path, progress=False)
    assert metrics["targets"]["cputime"]["rows_test"] == len(test_rows) - 10
    assert metrics["targets"]["memory"]["rows_test"] == len(test_rows)
    assert metrics["pipeline"]["xgb"]["n"] == len(test_rows) - 10
    assert "bayes" not in metrics["targets"]["memory"]["models"]


def test_time_split_and_warning_when_trained_on_another_split(tmp_path, no_report):
    table = make_table(n=300, seed=6, targets=("io", "walltime"))
    predictor = FakePredictor(table)
    predictor.manifest = {"version": "x", "training": {"split": "random"}}
    metrics = evaluate_bundle(predictor, table, tmp_path, split="time", progress=False)
    assert metrics["dataset"]["rows_test"] == int((table.frame["split_time"] == "test").sum())
    assert metrics["warnings"] and "'random' split" in metrics["warnings"][0]


def test_mismatched_bins_are_refused(tmp_path, table):
    predictor = FakePredictor(table)
    predictor.bins["io"] = TargetBins("io", "kB/s/core", (0, 100, float("inf")), ("lo", "hi"))
    with pytest.raises(EvaluationError, match=r"io: the table's bin edges .* differ"):
        evaluate_bundle(predictor, table, tmp_path, progress=False)


def test_missing_features_and_split_are_named(tmp_path, table):
    predictor = FakePredictor(table)
    with pytest.raises(EvaluationError, match="split='weekly'"):
        evaluate_bundle(predictor, table, tmp_path, split="weekly", progress=False)
    frame = table.frame.drop(columns=["corecount"])
    features = [f for f in table.features if f.name != "corecount"]
    smaller = TrainingTable(frame, features, table.bins)
    with pytest.raises(EvaluationError, match=r"lacks bundle features \['corecount'\]"):
        evaluate_bundle(predictor, smaller, tmp_path, progress=False)
