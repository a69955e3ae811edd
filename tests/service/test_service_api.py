"""Endpoints of the service on a fake bundle, in process."""

from __future__ import annotations

import json
import os

from service_fakes import task

from scoutless.config import Settings
from scoutless.ops.prediction_log import PredictionLog
from scoutless.targets.bins import load_bins


def test_predict_answers_every_target_with_panda_units(client) -> None:
    r = client.post("/v1/predict", json={"tasks": [task(jeditaskid=11), task()]})
    assert r.status_code == 200
    body = r.json()
    assert body["model_version"] == "fake-1"
    assert set(body["timings_ms"]) == {"preprocess", "predict", "aggregate", "log"}
    assert [t["jeditaskid"] for t in body["tasks"]] == [11, None]
    bins = load_bins()
    for target, pred in body["tasks"][0]["targets"].items():
        c = pred["class_id"]
        assert pred["class_label"] == bins[target].labels[c]
        assert pred["recommended_value"] == bins[target].recommended[c]
        assert abs(sum(pred["probabilities"]) - 1) < 1e-9
        assert pred["confidence"] == pred["probabilities"][c]
        lo, hi = pred["bin_range"]
        assert lo == bins[target].edges[c]
        assert hi is None or hi == bins[target].edges[c + 1]
    assert body["tasks"][0]["targets"]["memory"]["panda_field"].startswith("ramCount")


def test_columns_layout_holds_the_same_predictions_as_the_tasks_layout(client, db_url) -> None:
    rows = [task(jeditaskid=11), task(processingtype="brand-new"), task(corecount=1.0)]
    per_task = client.post("/v1/predict", json={"tasks": rows}).json()
    r = client.post("/v1/predict", json={"tasks": rows, "layout": "columns", "policy": "argmax"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["layout"] == "columns" and "tasks" not in body
    assert body["jeditaskids"] == [11, None, None]
    assert body["flags"] == [t["flags"] for t in per_task["tasks"]]
    assert set(body["targets"]) == {"memory", "cputime", "io", "walltime"}
    for target, columns in body["targets"].items():
        for i, answered in enumerate(t["targets"][target] for t in per_task["tasks"]):
            c = columns["class_id"][i]
            assert c == answered["class_id"]
            assert columns["class_labels"][c] == answered["class_label"]
            assert list(columns["bin_ranges"][c]) == answered["bin_range"]
            assert columns["recommended_value"][i] == answered["recommended_value"]
            assert columns["recommended_values"][c] == answered["recommended_value"]
            for field in ("probabilities", "confidence", "p_sufficient"):
                assert columns[field][i] == answered[field]
            for field in ("unit", "panda_field", "policy"):
                assert columns[field] == answered[field]
    assert len(PredictionLog(db_url).read(target="memory")) == 2 * len(rows)  # both logged
    refused = client.post("/v1/predict", json={"tasks": rows, "layout": "rows"})
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"] == ["body", "layout"]


def test_single_task_and_target_subset(client) -> None:
    r = client.post("/v1/predict", json={"task": task(), "targets": ["walltime", "io"]})
    assert r.status_code == 200
    assert set(r.json()["tasks"][0]["targets"]) == {"walltime", "io"}
    assert r.json()["model_versions"] == {"walltime": "fake-1", "io": "fake-1"}


def test_taskparams_input_goes_through_feature_extraction(client) -> None:
    params = {
        "jediTaskID": 4242,
        "taskName": "mc16_13TeV.123.Sim",
        "prodSourceLabel": "managed",
        "processingType": "simul",
        "coreCount": 8,
        "ramCount": 2000,
        "nEventsPerJob": 100,
    }
    r = client.post("/v1/predict", json={"taskparams": [params, json.dumps(params)]})
    assert r.status_code == 200, r.text
    tasks = r.json()["tasks"]
    assert [t["jeditaskid"] for t in tasks] == [4242, 4242]
    assert tasks[0]["targets"] == tasks[1]["targets"]


def test_risk_policy_allocates_more_when_alpha_shrinks(client) -> None:
    rows = [task(corecount=float(c)) for c in range(1, 30)]

    def classes(policy: str, alpha: float | None = None) -> list[int]:
        body = {"tasks": rows, "policy": policy, "targets": ["walltime"]}
        if alpha is not None:
            body["alpha"] = alpha
        r = client.post("/v1/predict", json=body)
        assert r.status_code == 200, r.text
        assert {t["targets"]["walltime"]["policy"] for t in r.json()["tasks"]} == {policy}
        return [t["targets"]["walltime"]["class_id"] for t in r.json()["tasks"]]

    loose, strict = classes("risk", 0.5), classes("risk", 0.01)
    assert all(s >= lo for s, lo in zip(strict, loose, strict=True))
    assert sum(strict) > sum(loose)
    assert len(classes("safe")) == len(rows)


def test_unknown_category_is_served_and_flagged(client) -> None:
    r = client.post("/v1/predict", json={"tasks": [task(processingtype="brand-new"), task()]})
    assert r.status_code == 200
    flags = [t["flags"] for t in r.json()["tasks"]]
    assert flags[0] == [
        {"kind": "unknown_category", "feature": "processingtype", "value": "brand-new"}
    ]
    assert flags[1] == []


def test_every_prediction_is_in_the_log(client, db_url) -> None:
    r = client.post("/v1/predict", json={"tasks": [task(jeditaskid=7), task()], "policy": "safe"})
    request_id = r.json()["request_id"]
    log = PredictionLog(db_url)
    rows = log.read()
    assert len(rows) == 8
    assert set(rows["request_id"]) == {request_id}
    assert set(rows["policy"]) == {"safe"}
    memory = log.read(target="memory")
    assert sorted(memory["jeditaskid"].dropna().astype(int)) == [7]
    answered = r.json()["tasks"][0]["targets"]["memory"]
    logged = memory[memory["jeditaskid"] == 7].iloc[0]
    assert logged["class_id"] == answered["class_id"]
    assert json.loads(logged["probabilities"]) == answered["probabilities"]
    assert json.loads(logged["features"])["corecount"] == 8.0
    assert log.read(model_version="other").empty


def test_model_health_ready_metrics(client) -> None:
    model = client.get("/v1/model").json()
    assert model["model_version"] == "fake-1"
    assert model["targets"] == ["memory", "cputime", "io", "walltime"]
    assert {f["name"] for f in model["features"]} >= {"corecount", "processingtype"}
    assert client.get("/healthz").json() == {"status": "ok", "pid": os.getpid()}
    assert client.get("/readyz").json()["ready"] is True
    client.post("/v1/predict", json={"task": task()})
    client.post("/v1/predict", json={"task": {"corecount": 1}})
    text = client.get("/metrics").text
    assert 'scoutless_requests_total{method="POST",route="/v1/predict",status="200"} 1.0' in text
    assert 'scoutless_stage_latency_seconds_count{stage="predict"} 1.0' in text
    assert 'scoutless_errors_total{kind="invalid_features"} 1.0' in text
    assert 'scoutless_model_info{version="fake-1"} 1.0' in text
    assert "scoutless_predictions_total{" in text


def test_a_few_tasks_get_the_same_decisions_as_a_batch() -> None:
    """Up to ``FastPaths.rows`` rows the decisions are read from Python lists, above it through
    numpy: every policy, every field, bit for bit."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    from service_fakes import FakePredictor

    from scoutless.fast_paths import current
    from scoutless.service.pipeline import Pipeline

    rng = np.random.default_rng(3)
    with ThreadPoolExecutor(2) as pool:
        pipeline = Pipeline(FakePredictor(), None, pool, settings=Settings())
        proba = {
            t: rng.dirichlet(np.ones(b.n_classes) * 0.3, size=current().rows + 1)
            for t, b in pipeline.predictor.bins.items()
        }
        few = {t: p[:3] for t, p in proba.items()}
        for policy in ("argmax", "safe", "risk"):
            batch = pipeline.decide(proba, policy=policy, alpha=0.1)
            small = pipeline.decide(few, policy=policy, alpha=0.1)
            for target, d in small.items():
                for field in ("classes", "probabilities", "confidence", "p_sufficient"):
                    assert getattr(d, field) == getattr(batch[target], field)[:3], (policy, field)
