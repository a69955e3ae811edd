from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from ops_fakes import prediction_rows
from prometheus_client import generate_latest

from scoutless.features.spec import FeatureSpec
from scoutless.ops.monitoring import MonitorGauges, build_snapshot, quality
from scoutless.ops.prediction_log import long_form
from scoutless.ops.report import render_report
from scoutless.targets.bins import load_bins

DAY1, DAY2 = pd.Timestamp("2026-01-01 10:00"), pd.Timestamp("2026-01-02 10:00")


def test_quality_rates_follow_class_order() -> None:
    q = quality(np.array([0, 1, 2, 3]), np.array([0, 0, 3, 3]))
    assert q["accuracy"] == 0.5
    assert q["under_rate"] == 0.25 and q["over_rate"] == 0.25
    assert 0 < q["macro_f1"] < 1


def _log_and_actuals() -> tuple[pd.DataFrame, pd.DataFrame]:
    feats1 = [{"corecount": 1.0, "processingtype": "simul"}] * 40
    feats2 = [{"corecount": 8.0, "processingtype": "reco"}] * 40
    rows = prediction_rows(list(range(40)), [1] * 40, created_at=DAY1, features=feats1)
    rows += prediction_rows(list(range(40, 80)), [1] * 40, created_at=DAY2, features=feats2)
    rows += prediction_rows([99], [1], created_at=DAY2, version="other")
    log = long_form([{**row, "id": i} for i, row in enumerate(rows)])
    actual = [1] * 40 + [3] * 30 + [1] * 10  # day 2: the model under-allocates 75 %
    actuals = pd.DataFrame({"jeditaskid": range(80), "target": "memory", "value": 1.0,
                            "class_id": actual})  # fmt: skip
    return log, actuals


def test_snapshot_windows_quality_and_drift() -> None:
    log, actuals = _log_and_actuals()
    reference = pd.DataFrame({"corecount": [1.0] * 100, "processingtype": ["simul"] * 100,
                              "memory_class": [1] * 100})  # fmt: skip
    specs = [FeatureSpec("corecount", "numerical"), FeatureSpec("processingtype", "categorical")]
    snap = build_snapshot(log, actuals, load_bins(targets=["memory"]), reference=reference,
                          specs=specs, every="1D", model_version="v1")  # fmt: skip
    perf = snap.performance.set_index("window_start")
    assert perf["n"].tolist() == [40, 40]
    assert perf["accuracy"].tolist() == [1.0, 0.25]
    assert perf["under_rate"].tolist() == [0.0, 0.75]
    drift = snap.feature_drift.set_index(["window_start", "feature"])["psi"]
    assert drift[(DAY1.floor("1D"), "processingtype")] == pytest.approx(0.0)
    assert drift[(DAY2.floor("1D"), "processingtype")] > 1.0
    prior = snap.prior_drift.query("source == 'actual'").set_index("window_start")["psi"]
    assert prior.iloc[0] == pytest.approx(0.0) and prior.iloc[1] > 1.0
    assert snap.confusion["memory"][3, 1] == 30
    long = snap.long()
    assert {"accuracy", "psi", "ks_stat", "prior_psi_actual", "prior_psi_predicted"} <= set(
        long["metric"]
    )
    assert snap.n_predictions == 80  # the other model's row is left out


def test_gauges_hold_latest_window(tmp_path) -> None:
    log, actuals = _log_and_actuals()
    snap = build_snapshot(log, actuals, load_bins(targets=["memory"]), every="1D")
    gauges = MonitorGauges()
    gauges.update(snap, n_alerts=2)
    text = generate_latest(gauges.registry).decode()
    assert 'scoutless_monitor_quality{metric="accuracy",target="memory"} 0.25' in text
    assert "scoutless_monitor_alerts_fired 2.0" in text


def test_html_report_embeds_plots(tmp_path) -> None:
    log, actuals = _log_and_actuals()
    bins = load_bins(targets=["memory"])
    reference = pd.DataFrame({"corecount": [1.0] * 50, "processingtype": ["simul"] * 50,
                              "memory_class": [0, 1] * 25})  # fmt: skip
    specs = [FeatureSpec("corecount", "numerical"), FeatureSpec("processingtype", "categorical")]
    snap = build_snapshot(log, actuals, bins, reference=reference, specs=specs, every="1D")
    alerts = pd.DataFrame([{"window_start": DAY2, "rule": "r<x>", "message": "m"}])
    page = render_report(snap, bins, tmp_path / "report.html", alerts=alerts).read_text()
    assert page.count("data:image/png;base64,") == 4
    assert "r&lt;x&gt;" in page  # escaped
    assert "<th>accuracy (↑ better)</th>" in page and "<th>under_rate</th>" not in page
    assert "<th>class below the actual (↓ better)</th>" in page
