"""Every prediction-log row names who asked (a token's name, a JWT's subject, "loopback")
and where its features came from: posted by the caller, or read from PanDA's database."""

from __future__ import annotations

import pandas as pd
from fastapi.testclient import TestClient
from service_fakes import LOOPBACK, FakePredictor, store_task, task

from scoutless.config import Settings
from scoutless.ops.prediction_log import DATABASE, POSTED, PredictionLog
from scoutless.service.app import create_app


def _origins(db_url: str) -> list[tuple[int | None, str, str]]:
    frame = PredictionLog(db_url).read().drop_duplicates("id").sort_values("id")
    ids = [None if pd.isna(v) else int(v) for v in frame["jeditaskid"]]
    return list(zip(ids, frame["caller"], frame["source"], strict=True))


def test_a_token_callers_rows_name_it_and_their_source(client, db_url) -> None:  # type: ignore[no-untyped-def]
    store_task(db_url, 555)
    assert client.get("/v1/tasks/555/prediction").status_code == 200
    made_up = task(corecount=1.0, jeditaskid=555)  # a real task's id, features of its own
    assert client.post("/v1/predict", json={"tasks": [made_up, task()]}).status_code == 200
    assert _origins(db_url) == [(555, "tester", DATABASE), (555, "tester", POSTED),
                                (None, "tester", POSTED)]  # fmt: skip


def test_without_tokens_the_caller_is_loopback(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db_url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    app = create_app(predictor=FakePredictor(), db_url=db_url, settings=Settings())
    with TestClient(app, client=LOOPBACK, base_url="http://127.0.0.1") as client:
        assert client.post("/v1/predict", json={"task": task()}).status_code == 200
    assert _origins(db_url) == [(None, "loopback", POSTED)]
