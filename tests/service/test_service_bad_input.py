"""Bad input answers 4xx naming the field, never 500; the service keeps serving."""

from __future__ import annotations

import pytest
from service_fakes import task


def _locs(response) -> list[list]:
    return [d["loc"] for d in response.json()["detail"]]


def test_malformed_json_is_422(client) -> None:
    r = client.post(
        "/v1/predict", content=b'{"tasks": [', headers={"content-type": "application/json"}
    )
    assert r.status_code == 422
    assert r.json()["detail"][0]["type"] == "json_invalid"


def test_missing_feature_is_422_naming_it(client) -> None:
    row = task()
    del row["corecount"]
    r = client.post("/v1/predict", json={"tasks": [task(), row]})
    assert r.status_code == 422
    assert _locs(r) == [["body", "tasks", 1, "corecount"]]


def test_wrong_type_is_422_naming_it(client) -> None:
    r = client.post("/v1/predict", json={"tasks": [task(), task(corecount="eight")]})
    assert r.status_code == 422
    assert _locs(r) == [["body", "tasks", 1, "corecount"]]
    assert "expected an integer from 1" in r.json()["detail"][0]["msg"]


def test_misspelt_feature_is_422(client) -> None:
    r = client.post("/v1/predict", json={"tasks": [task(corecnt=8)]})
    assert r.status_code == 422
    assert ["body", "tasks", 0, "corecnt"] in _locs(r)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tasks": "not a list"}, "tasks"),
        ({"tasks": [task()], "policy": "yolo"}, "policy"),
        ({"tasks": [task()], "alpha": 1.5}, "alpha"),
        ({"tasks": [task()], "bogus": 1}, "bogus"),
        ({"tasks": [task()], "targets": ["gpu"]}, "targets"),
        ({"tasks": [task(jeditaskid="abc")]}, "jeditaskid"),
        ({"taskparams": ["{not json"]}, "taskparams"),
        ({"taskparams": ["[1, 2]"]}, "taskparams"),
    ],
)
def test_bad_request_fields_are_named(client, body, field) -> None:
    r = client.post("/v1/predict", json=body)
    assert r.status_code == 422, r.text
    assert any(field in map(str, loc) for loc in _locs(r)), r.json()


def test_no_input_and_two_inputs_are_422(client) -> None:
    assert client.post("/v1/predict", json={"policy": "argmax"}).status_code == 422
    both = {"tasks": [task()], "taskparams": [{}]}
    assert client.post("/v1/predict", json=both).status_code == 422


def test_batch_above_limit_is_413(client, settings) -> None:
    n = settings.service.max_batch + 1
    r = client.post("/v1/predict", json={"tasks": [task()] * n})
    assert r.status_code == 413
    assert str(settings.service.max_batch) in r.json()["detail"][0]["msg"]
    assert client.post("/v1/predict", json={"tasks": [task()] * (n - 1)}).status_code == 200


def test_bad_query_parameters_on_task_endpoint(client) -> None:
    assert client.get("/v1/tasks/abc/prediction").status_code == 422
    assert client.get("/v1/tasks/1/prediction?alpha=7").status_code == 422
    assert client.get("/v1/tasks/1/prediction?targets=gpu").status_code == 422


def test_openapi_documents_the_predict_body(client) -> None:
    """The body is parsed by pydantic straight from the bytes; its schema is still served."""
    body = client.get("/openapi.json").json()["paths"]["/v1/predict"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert {"tasks", "task", "taskparams", "policy"} <= set(schema["properties"])
    assert body["required"] is True
