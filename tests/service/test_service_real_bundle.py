"""The service on a tiny real bundle (trained once per session), in process and via the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient
from service_fakes import panda_history, task
from service_procs import free_port

from scoutless.config import Settings
from scoutless.features.spec import PANDA_FEATURES
from scoutless.history.table import TrainingTable
from scoutless.ops.prediction_log import PredictionLog
from scoutless.service.app import create_app
from scoutless.targets.bins import load_bins
from scoutless.targets.spec import class_col, value_col


def _tiny_table(n: int = 300, seed: int = 0) -> TrainingTable:
    rng = np.random.default_rng(seed)
    kinds = np.array(["evgen", "simul", "reco", "deriv", "merge"])
    kind = rng.integers(0, len(kinds), n)
    frame = pd.DataFrame({s.name: [None] * n for s in PANDA_FEATURES})
    frame["processingtype"] = kinds[kind]
    for spec in PANDA_FEATURES:
        if spec.kind == "numerical":
            frame[spec.name] = rng.lognormal(3, 1, n)
    bins = load_bins()
    scale = {"memory": 700.0, "cputime": 60.0, "io": 300.0, "walltime": 9000.0}
    for target, b in bins.items():
        values = scale[target] * (1 + kind) * rng.lognormal(0, 0.3, n)
        frame[value_col(target)] = values
        frame[class_col(target)] = b.classify(values)
    frame["split_random"] = np.where(rng.random(n) < 0.2, "test", "train")
    return TrainingTable(frame, list(PANDA_FEATURES), bins)


@pytest.fixture(scope="session")
def real_bundle(tmp_path_factory) -> Path:
    training = pytest.importorskip("scoutless.training")
    out = tmp_path_factory.mktemp("service-bundle") / "bundle"
    return training.train_bundle(
        _tiny_table(), out, models=("xgb",), progress=False, max_epochs=2, n_jobs=1, settings=Settings()
    )


def test_real_bundle_predicts_validates_and_logs(real_bundle, tmp_path) -> None:
    import gc
    from concurrent.futures import ThreadPoolExecutor

    import torch

    def torch_threads() -> int:  # as a new thread (the service's target threads) sees it
        with ThreadPoolExecutor(1) as fresh:
            return fresh.submit(torch.get_num_threads).result()

    db_url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    original = torch.get_num_threads()
    torch.set_num_threads(2)
    before = gc.get_threshold()
    with TestClient(
        create_app(real_bundle, db_url=db_url),
        client=("127.0.0.1", 50000),
        base_url="http://127.0.0.1",
    ) as client:
        # one intra-op thread and a larger GC generation while serving, restored after
        assert torch_threads() == 1 and gc.get_threshold()[0] > before[0]
        version = client.get("/v1/model").json()["model_version"]
        rows = [task(processingtype=p) for p in ("evgen", "merge", "never-seen")]
        for policy in ("argmax", "safe", "risk"):
            r = client.post("/v1/predict", json={"tasks": rows, "policy": policy})
            assert r.status_code == 200, r.text
            body = r.json()
            assert body["model_version"] == version
            memory = [t["targets"]["memory"] for t in body["tasks"]]
            assert all(abs(sum(m["probabilities"]) - 1) < 1e-5 for m in memory)
        unseen = {"kind": "unknown_category", "feature": "processingtype", "value": "never-seen"}
        assert [unseen in t["flags"] for t in body["tasks"]] == [False, False, True]
        bad = task(corecount="eight")
        r = client.post("/v1/predict", json={"tasks": [bad]})
        assert r.status_code == 422
        assert r.json()["detail"][0]["loc"][-1] == "corecount"
        del bad["corecount"]
        r = client.post("/v1/predict", json={"tasks": [bad]})
        assert r.json()["detail"][0]["loc"] == ["body", "tasks", 0, "corecount"]
    assert torch_threads() == 2 and gc.get_threshold() == before
    torch.set_num_threads(original)
    logged = PredictionLog(db_url).read(model_version=version)
    assert len(logged) == 3 * 3 * 4


def test_cli_serve_runs_and_stops_on_sigterm(real_bundle, tmp_path) -> None:
    port = free_port()
    cmd = [sys.executable, "-c", "from scoutless.cli.main import app; app()", "serve",
           "--bundle", str(real_bundle), "--db", panda_history(f"sqlite:///{tmp_path}/db.sqlite"),
           "--port", str(port), "--targets", "memory,walltime"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            try:
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        body = httpx.post(url + "/v1/predict", json={"task": task()}, timeout=10).json()
        assert set(body["tasks"][0]["targets"]) == {"memory", "walltime"}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) in (0, -signal.SIGTERM)  # uvicorn re-raises it after draining
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stderr.close()


def _worker_pids(url: str, n_clients: int = 16) -> set[int]:
    """The workers that answer ``n_clients`` keep-alive connections opened together."""
    clients = [httpx.Client(base_url=url, timeout=30) for _ in range(n_clients)]
    try:
        return {c.get("/healthz").json()["pid"] for c in clients}
    finally:
        for c in clients:
            c.close()


def test_cli_serve_workers_share_connections_restart_and_drain(real_bundle, tmp_path) -> None:
    """--workers 2: connections reach both workers (one SO_REUSEPORT socket each), a killed
    worker is replaced, and SIGTERM drains and stops them all."""
    port = free_port()
    cmd = [sys.executable, "-c", "from scoutless.cli.main import app; app()", "serve",
           "--bundle", str(real_bundle), "--db", panda_history(f"sqlite:///{tmp_path}/db.sqlite"),
           "--port", str(port), "--workers", "2"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline, pids = time.monotonic() + 180, set()
        while time.monotonic() < deadline and len(pids) < 2:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            try:
                pids = _worker_pids(url)
            except httpx.TransportError:
                time.sleep(0.2)
        assert len(pids) == 2
        for _ in range(4):
            r = httpx.post(url + "/v1/predict", json={"task": task()}, timeout=30)
            assert r.status_code == 200, r.text
        victim = min(pids)
        os.kill(victim, signal.SIGKILL)
        deadline, now = time.monotonic() + 180, set()
        while time.monotonic() < deadline and not (len(now) == 2 and victim not in now):
            try:
                now = _worker_pids(url)
            except httpx.TransportError:
                time.sleep(0.2)
        assert len(now) == 2 and victim not in now  # replaced, and serving again
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        for pid in now:  # no orphaned worker keeps the port
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stderr.close()


def test_cli_serve_refuses_bundle_and_remote_together(tmp_path) -> None:
    from typer.testing import CliRunner

    from scoutless.cli.main import app

    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 2


def test_value_and_cost_policies_answer_each_task_its_own_value(real_bundle, tmp_path) -> None:
    """policy=value: the (1 - alpha) value, the class that holds it, p_sufficient near
    1 - alpha; policy=cost: a value per task and a scout decision with its costs; both
    in the columns layout too; the log keeps each task's own value."""
    from scoutless.bundle import load_bundle

    predictor = load_bundle(real_bundle)
    db_url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    rows = [task(processingtype=p) for p in ("evgen", "merge", "never-seen")]
    with TestClient(
        create_app(real_bundle, db_url=db_url),
        client=("127.0.0.1", 50000),
        base_url="http://127.0.0.1",
    ) as client:
        low = client.post("/v1/predict", json={"tasks": rows, "policy": "value", "alpha": 0.3})
        high = client.post("/v1/predict", json={"tasks": rows, "policy": "value", "alpha": 0.02})
        assert low.status_code == 200 and high.status_code == 200, low.text
        for lo, hi in zip(low.json()["tasks"], high.json()["tasks"], strict=True):
            for target, answer in hi["targets"].items():
                value = answer["recommended_value"]
                assert value >= lo["targets"][target]["recommended_value"]
                assert answer["class_id"] == int(predictor.bins[target].classify([value])[0])
                assert answer["p_sufficient"] > 0.9 and answer["alpha"] == 0.02
        cost = client.post("/v1/predict", json={"tasks": rows, "policy": "cost"}).json()
        scouts = [t["scout"] for t in cost["tasks"]]
        assert scouts[2]["scout"] is True and "never seen" in scouts[2]["reason"]
        assert all(s["predict_cost"] >= 0 and s["scout_cost"] > 0 for s in scouts)
        columns = client.post(
            "/v1/predict", json={"tasks": rows, "policy": "cost", "layout": "columns"}
        ).json()
        assert columns["scout"] == scouts
        assert columns["targets"]["memory"]["recommended_value"] == [
            t["targets"]["memory"]["recommended_value"] for t in cost["tasks"]
        ]
    logged = PredictionLog(db_url).read(model_version=predictor.version, target="memory")
    assert len(logged) == 4 * 3  # four requests of three tasks
    values = logged[logged["policy"] == "cost"]["recommended_value"].tolist()
    assert values[:3] == [t["targets"]["memory"]["recommended_value"] for t in cost["tasks"]]


def test_value_policy_on_a_bundle_without_value_models_says_why(client) -> None:
    r = client.post("/v1/predict", json={"task": task(), "policy": "value"})
    assert r.status_code == 422
    assert "no value model" in r.text and "retrain" in r.text


def test_model_endpoint_shows_a_bundle_trained_under_other_library_versions(
    real_bundle, tmp_path
) -> None:
    import json
    import shutil

    copy = shutil.copytree(real_bundle, tmp_path / "bundle")
    manifest = json.loads((copy / "manifest.json").read_text())
    assert manifest["libraries"]["torch"]  # recorded at training
    manifest["libraries"]["torch"] = "1.13.1"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with TestClient(
        create_app(real_bundle, db_url=f"sqlite:///{tmp_path / 'a.sqlite'}"),
        client=("127.0.0.1", 50000), base_url="http://127.0.0.1",
    ) as c:
        assert c.get("/v1/model").json()["library_warning"] is None
    with TestClient(
        create_app(copy, db_url=f"sqlite:///{tmp_path / 'b.sqlite'}"),
        client=("127.0.0.1", 50000),
        base_url="http://127.0.0.1",
    ) as client:
        warning = client.get("/v1/model").json()["library_warning"]
    assert warning.startswith("trained with torch 1.13.1 (now ")


def test_the_readme_tour_works_with_a_predict_token(real_bundle, tmp_path) -> None:
    """The README's requests, on a service with tokens configured: 401 without the token,
    200 with a ``predict`` token (``-H "Authorization: Bearer $TOKEN"`` is all that changes)."""
    from service_fakes import TOKEN, store_task

    from scoutless.config import Settings

    db_url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    store_task(db_url, 123)
    settings = Settings(service={"tokens": f"jedi predict {TOKEN}"})
    tour = [
        "/v1/tasks/123/prediction?policy=value&alpha=0.05",
        "/v1/tasks/123/prediction?policy=cost",
    ]
    with TestClient(create_app(real_bundle, db_url=db_url, settings=settings)) as client:
        for url in tour:
            assert client.get(url).status_code == 401
            answer = client.get(url, headers={"Authorization": f"Bearer {TOKEN}"})
            assert answer.status_code == 200, answer.text
            assert answer.json()["tasks"][0]["jeditaskid"] == 123
    assert PredictionLog(db_url).count() == 2
