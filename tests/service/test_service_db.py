"""GET /v1/tasks/{id}/prediction reads PanDA tables through the training feature code."""

from __future__ import annotations

from fastapi.testclient import TestClient
from service_fakes import TOKEN, FakePredictor, store_task, task

from scoutless.service.app import create_app


def test_task_from_database_is_predicted_like_posted_features(client, db_url) -> None:
    store_task(db_url, 555)
    r = client.get("/v1/tasks/555/prediction", params={"targets": "memory,io"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["tasks"][0]["jeditaskid"] == 555
    assert set(body["tasks"][0]["targets"]) == {"memory", "io"}
    assert "fetch" in body["timings_ms"]


def test_unknown_task_is_404(client, db_url) -> None:
    store_task(db_url, 1)
    r = client.get("/v1/tasks/999/prediction")
    assert r.status_code == 404
    assert "999" in r.json()["detail"][0]["msg"]


def test_missing_database_is_503_by_id_and_readyz_names_the_tables(tmp_path, settings) -> None:
    """A mistyped SQLite path is never created: reads by id answer 503, posted features are
    still predicted, and /readyz is not ready and says which tables are missing."""
    missing = tmp_path / "no-such-dir" / "panda.sqlite"
    log_db = f"sqlite:///{tmp_path / 'log.sqlite'}"
    app = create_app(predictor=FakePredictor(), db_url=f"sqlite:///{missing}",
                     log_db_url=log_db, settings=settings)  # fmt: skip
    with TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        r = client.get("/v1/tasks/1/prediction")
        assert r.status_code == 503
        assert r.json()["detail"][0]["type"] == "database_unavailable"
        assert r.json()["error_id"] in r.json()["detail"][0]["msg"]
        assert client.post("/v1/predict", json={"task": task()}).status_code == 200
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["checks"]["history"] is False
        assert "jedi_tasks, jedi_taskparams, jedi_datasets" in ready.json()["problems"]["history"]
        assert client.get("/v1/model").status_code == 200
    assert not missing.exists() and not missing.parent.exists()


def test_readyz_follows_the_tables_once_they_are_made(tmp_path, settings) -> None:
    """A database without PanDA's tables is not ready; made a history, it is, without a
    restart (the tables are looked for again while missing)."""
    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    app = create_app(predictor=FakePredictor(), db_url=url, settings=settings)
    with TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        ready = client.get("/readyz").json()
        assert ready["ready"] is False and "jedi_tasks" in ready["problems"]["history"]
        store_task(url, 7)
        ready = client.get("/readyz").json()
        assert ready["ready"] is True and ready["checks"]["history"] is True
        assert "history" not in ready["problems"]


def _metric(text: str, name: str, stage: str) -> float:
    line = next(x for x in text.splitlines() if x.startswith(f'{name}{{stage="{stage}"}}'))
    return float(line.rsplit(" ", 1)[1])


def test_metrics_count_each_stage_s_groups_and_what_they_held(client, db_url) -> None:
    """``/metrics`` says how many groups the models, the log's commits and the task reads
    formed and what they held: the mean group, the service's lever on CPU per request."""
    text = client.get("/metrics").text
    for stage in ("model", "log", "fetch"):  # nothing yet: zero, not missing
        assert _metric(text, "scoutless_groups_total", stage) == 0
    store_task(db_url, 555)
    assert client.get("/v1/tasks/555/prediction").status_code == 200
    assert client.post("/v1/predict", json={"task": task()}).status_code == 200
    assert client.get("/v1/tasks/556/prediction").status_code == 404  # read, never computed
    text = client.get("/metrics").text
    # one request at a time: each group holds one request (or one task read)
    assert _metric(text, "scoutless_groups_total", "model") == 2
    assert _metric(text, "scoutless_group_items_total", "model") == 2
    assert _metric(text, "scoutless_groups_total", "log") == 2
    assert _metric(text, "scoutless_group_items_total", "log") == 2
    assert _metric(text, "scoutless_groups_total", "fetch") == 2
    assert _metric(text, "scoutless_group_items_total", "fetch") == 2
