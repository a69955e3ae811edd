"""Training with --scheduler: XGBoost on the Dask cluster, the DNN on a 2-rank torchrun DDP
job; the bundle is an ordinary one (plain booster, DNNModel files) that loads and serves."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import xgboost as xgb
from fastapi.testclient import TestClient

from scoutless.bundle import load_bundle
from scoutless.config import Settings
from scoutless.distributed.fitting import DistributedFitter
from scoutless.history.table import TrainingTable
from scoutless.service.app import create_app
from scoutless.training import train_bundle


@pytest.fixture(scope="module")
def distributed_bundle(dask_client, generated_history, tmp_path_factory):
    """A memory-only bundle (one torchrun launch) trained on the generated history's table."""
    root = tmp_path_factory.mktemp("scale-train")
    reference = generated_history.reference
    table = TrainingTable(
        reference.frame, reference.features, {"memory": reference.bins["memory"]},
        info=reference.info,
    )  # fmt: skip
    fitter = DistributedFitter(dask_client, nproc_per_node=2, n_shards=3, work_root=root / "ddp")
    bundle = train_bundle(
        table, root / "bundle", models=("xgb_native", "dnn"), max_epochs=2, progress=False,
        n_jobs=1, fit_model=fitter,
        settings=Settings(),
    )  # fmt: skip
    return bundle, root / "ddp" / "dnn-1", table


def test_ddp_replicas_end_with_equal_weights(distributed_bundle):
    bundle, work, _ = distributed_bundle
    replicas = [torch.load(work / f"replica-{rank}.pt") for rank in (0, 1)]
    assert replicas[0].keys() == replicas[1].keys()
    for name, tensor in replicas[0].items():
        assert torch.equal(tensor, replicas[1][name]), name
    # each rank read its own share: shards 0 and 2 for rank 0, shard 1 for rank 1
    assert sorted(p.name for p in work.glob("fit-*.parquet")) == [
        "fit-00000.parquet", "fit-00001.parquet", "fit-00002.parquet",
    ]  # fmt: skip
    saved = torch.load(bundle / "models" / "memory" / "dnn" / "dnn.pt")
    assert all(torch.equal(saved[k], replicas[0][k]) for k in saved)


def test_bundle_holds_a_plain_booster_and_a_dnn_that_trained(distributed_bundle):
    bundle, _, _ = distributed_bundle
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert set(manifest["validation_metrics"]["memory"]) == {"xgb_native", "dnn"}
    booster = xgb.Booster()
    booster.load_model(bundle / "models" / "memory" / "xgb_native" / "xgb_native.ubj")
    assert booster.num_boosted_rounds() >= 1
    dnn = json.loads((bundle / "models" / "memory" / "dnn" / "dnn.json").read_text())
    assert 1 <= len(dnn["history"]) <= 2 and dnn["temperature"] > 0


def test_distributed_bundle_loads_and_serves_like_any_other(distributed_bundle, tmp_path):
    bundle, _, table = distributed_bundle
    predictor = load_bundle(bundle)
    test_rows = table.split("random")[1]
    features = table.X(test_rows)
    for model in ("xgb_native", "dnn"):
        proba = predictor.predict_proba(features, model=model)["memory"]
        assert proba.shape == (len(features), table.bins["memory"].n_classes)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-5)
    first = json.loads(features.iloc[:1].to_json(orient="records"))[0]
    with TestClient(
        create_app(bundle, db_url=f"sqlite:///{tmp_path / 'log.sqlite'}"),
        client=("127.0.0.1", 50000), base_url="http://127.0.0.1",
    ) as client:
        response = client.post("/v1/predict", json={"task": first})
    assert response.status_code == 200, response.text
    served = response.json()["tasks"][0]["targets"]["memory"]["probabilities"]
    expected = predictor.predict_proba(features.iloc[:1])["memory"][0]
    np.testing.assert_allclose(served, expected, rtol=1e-4, atol=1e-6)


def test_cli_retrain_trains_the_challenger_on_the_cluster(
    dask_cluster, generated_history, tmp_path, monkeypatch
):
    from typer.testing import CliRunner

    from scoutless.cli.main import app
    from scoutless.distributed import xgb as dask_xgb

    fits: list[str] = []
    fit_on_dask = dask_xgb.fit_xgb_on_dask

    def spy(client, model, *args, **kwargs):  # type: ignore[no-untyped-def]
        fits.append(model.name)
        return fit_on_dask(client, model, *args, **kwargs)

    monkeypatch.setattr(dask_xgb, "fit_xgb_on_dask", spy)

    registry = tmp_path / "registry"
    args = ["retrain", "--registry", str(registry), "--db", generated_history.url,
            "--models", "xgb", "--scheduler", dask_cluster.scheduler_address]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    # per target (retrain: a time split) the early-stopped fit, its refit on the latest rows
    # and the guard's refit on the earlier validation half, each through xgboost.dask
    assert fits == ["xgb"] * 12
    assert "promoted" in result.output and "no champion yet" in result.output
    (version,) = (registry / "versions").iterdir()
    manifest = json.loads((version / "manifest.json").read_text())
    assert manifest["training"]["models"] == ["xgb"]
