"""The history reader, data build, the service's DB endpoint and the prediction log on a
database created from PanDA's own DDL (schema doma_panda, DEFAULT partitions)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from scoutless.history.panda_db import make_engine, read_history
from scoutless.history.table import TrainingTable
from scoutless.service.app import create_app

pytestmark = pytest.mark.postgres


def test_generated_history_lands_in_pandas_partitioned_tables(panda_db: str) -> None:
    engine = make_engine(panda_db)
    with engine.connect() as conn:
        where = conn.execute(text(
            "SELECT table_schema FROM information_schema.columns "
            "WHERE table_name = 'jedi_tasks' AND column_name = 'ramunit'"
        )).scalars().all()  # fmt: skip
        n_tasks = conn.execute(text("SELECT count(*) FROM doma_panda.jedi_tasks_default")).scalar()
    assert where == ["doma_panda"] and n_tasks >= 300
    history = read_history(engine, list(range(1, 51)))
    assert len(history.tasks) == 50 and not history.jobs.empty
    assert history.features()["ramunit"].isin(["MBPerCore", "MBPerCoreFixed"]).all()
    engine.dispose()


def test_build_reads_every_task(panda_table) -> None:  # type: ignore[no-untyped-def]
    table = TrainingTable.load(panda_table)
    excluded = sum(table.info.get("excluded", {}).values())
    assert len(table.frame) + excluded == 300 and len(table.frame) >= 250


def test_service_db_endpoint_and_prediction_log(panda_db: str, panda_bundle) -> None:  # type: ignore[no-untyped-def]
    with TestClient(
        create_app(panda_bundle, db_url=panda_db),
        client=("127.0.0.1", 50000),
        base_url="http://127.0.0.1",
    ) as client:
        r = client.get("/v1/tasks/7/prediction", params={"policy": "risk"})
        assert r.status_code == 200, r.text
        request_id = r.json()["request_id"]
        assert client.get("/v1/tasks/999999999/prediction").status_code == 404
    engine = make_engine(panda_db)
    logged = pd.read_sql(
        text("SELECT jeditaskid, predictions FROM doma_panda.scoutless_task_predictions"
             " WHERE request_id = :r"),
        engine, params={"r": request_id},
    )  # fmt: skip
    engine.dispose()
    assert logged["jeditaskid"].tolist() == [7]  # one row per task, in PanDA's schema
    assert sorted(json.loads(logged["predictions"][0])) == ["cputime", "io", "memory", "walltime"]


TASK = {"taskName": "mc16_13TeV.410470.PhPy8EG.simul.e6337_s3126", "userName": "prod",
        "prodSourceLabel": "managed", "processingType": "simul", "transPath": "Sim_tf.py",
        "coreCount": 8, "ramCount": 2000, "ramUnit": "MBPerCore", "nEventsPerJob": 100}  # fmt: skip


def test_taskparams_cli_and_client_fill_the_same_parameters(panda_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from typer.testing import CliRunner

    from scoutless.cli.main import app
    from scoutless.client import Client
    from scoutless.ops.rollout import set_rollout

    src, out = tmp_path / "task.json", tmp_path / "filled.json"
    src.write_text(json.dumps(TASK))
    db = f"sqlite:///{tmp_path / 'rollout.sqlite'}"  # the client knows no rollout: full
    set_rollout(make_engine(db), "full", seed=0, reason="compare with the client", changed_by="tests")
    args = [
        "taskparams",
        str(src),
        "--bundle",
        str(panda_bundle),
        "--policy",
        "risk",
        "--out",
        str(out),
        "--db",
        db,
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    filled = json.loads(out.read_text())
    assert filled["taskName"] == TASK["taskName"] and filled["ramUnit"] == "MBPerCore"
    assert filled["ioIntensityUnit"] == "kBPerS" and filled["cpuTimeUnit"].endswith("HS06sPerEvent")
    with TestClient(
        create_app(panda_bundle, log_predictions=False),
        client=("127.0.0.1", 50000),
        base_url="http://127.0.0.1",
    ) as http:
        client = Client("http://testserver")
        client._http = http  # the in-process app instead of a socket
        via_service = client.fill_taskparams(TASK, policy="risk")
    keys = ("ramCount", "cpuTime", "cpuTimeUnit", "ioIntensity", "skipScout")
    assert {k: via_service.get(k) for k in keys} == {k: filled.get(k) for k in keys}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert (
        CliRunner().invoke(app, ["taskparams", str(bad), "--bundle", str(panda_bundle)]).exit_code
        == 2
    )


def test_taskparams_follows_the_rollout_with_the_task_name_as_key(panda_bundle, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from scoutless.allocation.arms import assign
    from scoutless.cli.main import app
    from scoutless.ops.rollout import set_rollout

    db = f"sqlite:///{tmp_path / 'rollout.sqlite'}"
    src, out = tmp_path / "task.json", tmp_path / "filled.json"
    src.write_text(json.dumps(TASK))
    base = ["taskparams", str(src), "--bundle", str(panda_bundle), "--policy", "risk",
            "--out", str(out), "--db", db]  # fmt: skip
    engine = make_engine(db)
    engine.connect().close()  # the listener's database is there (reading creates none)
    default = CliRunner().invoke(app, base)
    assert default.exit_code == 0 and "arm shadow" in default.output  # no row: shadow
    assert "skipScout" not in json.loads(out.read_text())
    set_rollout(engine, "full", seed=0, reason="eligibility")
    full = CliRunner().invoke(app, base)
    assert full.exit_code == 0, full.output
    eligible = json.loads(out.read_text()).get("skipScout") is True
    set_rollout(engine, "shadow", seed=0, reason="watch")
    shadow = CliRunner().invoke(app, base)
    assert shadow.exit_code == 0 and "arm shadow" in shadow.output
    assert "skipScout" not in json.loads(out.read_text())
    state = set_rollout(engine, "canary", share=0.5, seed=1)
    canary = CliRunner().invoke(app, base)
    expected = assign(state, f"name:{TASK['taskName']}", eligible).arm
    assert canary.exit_code == 0 and f"arm {expected}" in canary.output
    assert (json.loads(out.read_text()).get("skipScout") is True) == (expected == "canary")
