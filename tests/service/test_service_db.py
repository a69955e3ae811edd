"""GET /v1/tasks/{id}/prediction reads PanDA tables through the training feature code."""

from __future__ import annotations

import json
from datetime import datetime

import pandas as pd
from fastapi.testclient import TestClient
from service_fakes import FakePredictor, task

from scoutless.history.db_write import write_frame
from scoutless.history.panda_db import create_schema, make_engine
from scoutless.service.app import create_app


def _store_task(db_url: str, jeditaskid: int) -> None:
    engine = make_engine(db_url)
    create_schema(engine)
    write_frame(
        engine,
        "jedi_tasks",
        pd.DataFrame(
            [
                {
                    "jeditaskid": jeditaskid,
                    "taskname": "mc16_13TeV.1.Sim",
                    "username": "prod",
                    "status": "defined",
                    "creationdate": datetime(2026, 1, 1),
                    "modificationtime": datetime(2026, 1, 1),
                    "prodsourcelabel": "managed",
                    "processingtype": "simul",
                    "corecount": 8,
                    "ramcount": 99999,  # measured by scouts: must not matter
                }
            ]
        ),
    )
    params = {"ramCount": 2000, "nEventsPerJob": 100, "nFilesPerJob": 1}
    write_frame(
        engine,
        "jedi_taskparams",
        pd.DataFrame([{"jeditaskid": jeditaskid, "taskparams": json.dumps(params)}]),
    )
    engine.dispose()


def test_task_from_database_is_predicted_like_posted_features(client, db_url) -> None:
    _store_task(db_url, 555)
    r = client.get("/v1/tasks/555/prediction", params={"targets": "memory,io"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["tasks"][0]["jeditaskid"] == 555
    assert set(body["tasks"][0]["targets"]) == {"memory", "io"}
    assert "fetch" in body["timings_ms"]


def test_unknown_task_is_404(client, db_url) -> None:
    _store_task(db_url, 1)
    r = client.get("/v1/tasks/999/prediction")
    assert r.status_code == 404
    assert "999" in r.json()["detail"]["msg"]


def test_database_down_is_503_on_db_endpoint_only(tmp_path, settings) -> None:
    down = f"sqlite:///{tmp_path / 'no-such-dir' / 'panda.sqlite'}"
    log_db = f"sqlite:///{tmp_path / 'log.sqlite'}"
    app = create_app(predictor=FakePredictor(), db_url=down, log_db_url=log_db, settings=settings)
    with TestClient(app) as client:
        r = client.get("/v1/tasks/1/prediction")
        assert r.status_code == 503
        assert r.json()["detail"]["kind"] == "database_unavailable"
        assert client.post("/v1/predict", json={"task": task()}).status_code == 200
        assert client.get("/readyz").status_code == 200
        assert client.get("/v1/model").status_code == 200
