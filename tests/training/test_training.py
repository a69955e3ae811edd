"""train_bundle: parts, manifest content, searches, and atomic writing when a run fails."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from scoutless.bundle import load_bundle
from scoutless.config import Settings
from scoutless.history.table import TrainingTable
from scoutless.models.dnn_model import DNNModel
from scoutless.models.xgb import XGBLabelModel
from scoutless.training import TrainingError, train_bundle
from scoutless.training import manifest as training


def test_manifest_records_what_the_contract_promises(small_bundle, small_table):
    manifest = json.loads((small_bundle / "manifest.json").read_text())
    for key in (
        "version",
        "created",
        "data_fingerprint",
        "source",
        "features",
        "targets",
        "bins",
        "library_versions",
        "hyperparameters",
        "validation_metrics",
        "champion",
    ):
        assert key in manifest, key
    assert manifest["version"].endswith(manifest["data_fingerprint"][:8])
    assert manifest["targets"] == ["memory", "io"]
    for t in manifest["targets"]:
        assert set(manifest["validation_metrics"][t]) == {"xgb", "xgb_native", "dnn"}
        assert manifest["champion"][t] in manifest["validation_metrics"][t]
        assert {"accuracy", "macro_f1"} <= set(manifest["validation_metrics"][t]["dnn"])
    assert manifest["hyperparameters"]["memory"]["dnn"]["embedding_dims"] == [6, 3]
    # the open top memory class gets a recommendation from the training values, the table's
    top = manifest["bins"]["memory"]["recommended"][-1]
    assert manifest["bins"]["memory"] == small_table.bins["memory"].to_dict()
    train = small_table.split()[0]
    values = train["memory_value"][train["memory_class"] == 3]
    assert top == pytest.approx(np.quantile(values, 0.9))


def test_missing_target_rows_are_left_out(small_bundle, small_table):
    predictor = load_bundle(small_bundle)
    rows = predictor.calibration_rows("memory")
    assert (small_table.frame["memory_class"].to_numpy()[rows] >= 0).all()
    assert (small_table.frame["split_random"].to_numpy()[rows] == "train").all()


def test_search_runs_grid_and_random_trials(small_table, tmp_path):
    out = train_bundle(
        small_table,
        tmp_path / "b",
        models=["xgb", "dnn"],
        trials=2,
        xgb_grid={"max_depth": [2, 3]},
        max_epochs=2,
        progress=False,
        n_jobs=1,
        settings=Settings(),
    )
    hyper = json.loads((out / "manifest.json").read_text())["hyperparameters"]["io"]
    assert len(hyper["xgb"]["grid_search"]) == 2
    assert hyper["xgb"]["max_depth"] in (2, 3)
    assert [t["trial"] for t in hyper["dnn"]["random_search"]] == [0, 1]


def test_failed_training_leaves_no_bundle_and_keeps_the_old_one(small_table, tmp_path, monkeypatch):
    out = tmp_path / "bundle"
    train_bundle(small_table, out, models=["xgb"], progress=False, n_jobs=1, settings=Settings())
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def boom(self, *args, **kwargs):
        raise RuntimeError("interrupted mid-way")

    monkeypatch.setattr(DNNModel, "fit", boom)
    with pytest.raises(RuntimeError, match="interrupted"):
        train_bundle(small_table, out, models=["xgb", "dnn"], progress=False, n_jobs=1, settings=Settings())
    monkeypatch.undo()
    monkeypatch.setattr(XGBLabelModel, "save", boom)  # fails while the bundle is written
    with pytest.raises(RuntimeError, match="interrupted"):
        train_bundle(small_table, out, models=["xgb"], progress=False, n_jobs=1, settings=Settings())
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]  # no temporary left
    with pytest.raises(RuntimeError, match="interrupted"):
        train_bundle(small_table, tmp_path / "fresh", models=["xgb"], progress=False, n_jobs=1, settings=Settings())
    assert not (tmp_path / "fresh").exists()


def test_bad_options_are_refused(small_table, tmp_path):
    with pytest.raises(TrainingError, match="unknown"):
        train_bundle(small_table, tmp_path / "b", models=["lgbm"], settings=Settings())
    with pytest.raises(TrainingError, match="trials"):
        train_bundle(small_table, tmp_path / "b", trials=-1, settings=Settings())
    assert (
        training.choose_champion(
            {"a": {"accuracy": 0.8, "macro_f1": 0.5}, "b": {"accuracy": 0.7, "macro_f1": 0.7}}
        )
        == "b"
    )


def test_explicit_xgb_grid_runs_without_trials(small_table, tmp_path):
    out = train_bundle(small_table, tmp_path / "b", models=["xgb_native"], progress=False,
                       xgb_grid={"max_depth": [2]}, n_jobs=1, settings=Settings())  # fmt: skip
    hyper = json.loads((out / "manifest.json").read_text())["hyperparameters"]["memory"]
    assert hyper["xgb_native"]["grid_search"][0]["params"] == {"max_depth": 2}
    assert hyper["xgb_native"]["max_depth"] == 2


def test_manifest_records_the_dnn_variant_chosen_on_validation(small_bundle):
    hyper = json.loads((small_bundle / "manifest.json").read_text())["hyperparameters"]
    for target in ("memory", "io"):
        dnn = hyper[target]["dnn"]
        tried = {r["variant"]: r for r in dnn["variant_search"]}
        assert list(tried) == ["reference", "ordinal", "ordinal_tempered"]
        best = max(tried.values(), key=lambda r: r["val_accuracy"] + r["val_macro_f1"])
        chosen = tried[dnn["variant"]]
        # the argmax leader, or a contender within its noise with a lower log-loss
        assert chosen["contender"] and best["contender"]
        contenders = [r for r in tried.values() if r["contender"]]
        assert chosen["val_log_loss"] == min(r["val_log_loss"] for r in contenders)
        assert dnn["options"]["head"] == ("softmax" if dnn["variant"] == "reference" else "ordinal")


def test_xgboost_is_refitted_on_the_latest_rows_on_a_time_split_only(
    small_bundle, small_table, tmp_path
):
    """A random split serves the early-stopped fits; a time split serves XGBoost refitted
    on the fit and validation rows (the DNN as fitted)."""
    manifest = json.loads((small_bundle / "manifest.json").read_text())
    assert manifest["training"]["split"] == "random"
    assert all("refit" not in h[f] for h in manifest["hyperparameters"].values() for f in h)
    frame = small_table.frame.copy()
    frame["creationdate"] = pd.Timestamp("2025-01-01") + pd.to_timedelta(
        np.arange(len(frame)), "min"
    )
    table = TrainingTable(frame, small_table.features, small_table.bins, small_table.source,
                          dict(small_table.info))  # fmt: skip
    out = train_bundle(table, tmp_path / "time", models=("xgb",), split="time",
                       progress=False, n_jobs=1, settings=Settings())  # fmt: skip
    timed = json.loads((out / "manifest.json").read_text())
    parts = timed["training"]["parts"]
    train = table.split("time")[0]
    for target, hyper in timed["hyperparameters"].items():
        labelled = int((train[f"{target}_class"] >= 0).sum())
        assert hyper["xgb"]["refit"]["rows"] <= parts["fit"] + parts["validation"]
        assert hyper["xgb"]["refit"]["rows"] < labelled  # the calibration rows stay out
