"""The prediction routes' short way (``service/hot_routes.py``) answers as FastAPI's does."""

from __future__ import annotations

from typing import Any

import pytest
from service_fakes import store_task, task

from scoutless.service import hot_routes
from scoutless.service.routes import predict

#: (method, path, JSON body, extra headers): answers, refusals, and requests FastAPI parses
REQUESTS: list[tuple[str, str, Any, dict[str, str]]] = [
    ("POST", "/v1/predict", {"task": task()}, {}),
    ("POST", "/v1/predict", {"tasks": [task(jeditaskid=7), task(corecount=1.0)]}, {}),
    ("POST", "/v1/predict", {"task": task(), "policy": "argmax", "alpha": 0.1}, {}),
    ("POST", "/v1/predict", {"tasks": [{"nope": 1}]}, {}),
    ("POST", "/v1/predict", {"tasks": [task()] * 51}, {}),
    ("POST", "/v1/predict", {"task": task(), "targets": ["nowhere"]}, {}),
    ("POST", "/v1/predict", b"{not json", {"content-type": "application/json"}),
    ("POST", "/v1/predict", {"task": task()}, {"x-request-id": "a b"}),
    ("POST", "/v1/predict", {"task": task()}, {"authorization": "Bearer wrong-token-0123456789"}),
    ("POST", "/v1/predict", {"task": task()}, {"authorization": "Basic abc"}),
    ("GET", "/v1/tasks/555/prediction", None, {}),
    ("GET", "/v1/tasks/0555/prediction", None, {}),
    ("GET", "/v1/tasks/999/prediction", None, {}),
    ("GET", "/v1/tasks/0/prediction", None, {}),
    ("GET", f"/v1/tasks/{2**63 - 1}/prediction", None, {}),
    ("GET", f"/v1/tasks/{2**63}/prediction", None, {}),
    ("GET", "/v1/tasks/-1/prediction", None, {}),
    ("GET", "/v1/tasks/abc/prediction", None, {}),
    ("GET", "/v1/tasks/555/prediction", None, {"authorization": "Bearer wrong-token-0123456789"}),
    ("GET", "/v1/tasks/555/prediction?targets=memory", None, {}),
    ("PUT", "/v1/predict", {"task": task()}, {}),
]


def _answers(client) -> list[tuple[int, dict[str, str], Any]]:
    out = []
    for i, (method, path, body, headers) in enumerate(REQUESTS):
        sent = {"x-request-id": f"same-{i}", **headers}
        if isinstance(body, bytes):
            r = client.request(method, path, content=body, headers=sent)
        else:
            r = client.request(method, path, json=body, headers=sent)
        answer = r.json()
        if isinstance(answer, dict):
            answer.pop("timings_ms", None)
            answer.pop("error_id", None)  # fresh for each 5xx
        kept = {k: v for k, v in r.headers.items() if k in ("content-type", "www-authenticate")}
        out.append((r.status_code, kept, answer))
    return out


def test_the_short_way_answers_as_fastapi_does(client, db_url, monkeypatch) -> None:
    store_task(db_url, 555)
    taken: list[str] = []  # the route functions the short way called (FastAPI keeps its own)
    for name in ("predict", "task_prediction"):

        def counted(*args, original=getattr(predict, name), name=name):  # type: ignore[no-untyped-def]
            taken.append(name)
            return original(*args)

        monkeypatch.setattr(predict, name, counted)
    short = _answers(client)
    assert taken.count("predict") == 10 and taken.count("task_prediction") == 6
    monkeypatch.setattr(hot_routes, "PREDICT_PATH", "/nowhere")  # every request FastAPI's way
    monkeypatch.setattr(hot_routes, "TASK_PREFIX", "/nowhere/")
    taken.clear()
    fastapi_way = _answers(client)
    assert taken == []
    for request, mine, theirs in zip(REQUESTS, short, fastapi_way, strict=True):
        assert mine == theirs, request[:2]
    assert [s for s, _, _ in short].count(200) == 5


def test_the_short_way_is_counted_under_the_route_template(client, db_url) -> None:
    store_task(db_url, 555)
    assert client.get("/v1/tasks/555/prediction").status_code == 200
    assert client.get("/v1/tasks/556/prediction").status_code == 404
    text = client.get("/metrics").text
    route = 'route="/v1/tasks/{jeditaskid}/prediction"'
    assert f'scoutless_requests_total{{method="GET",{route},status="200"}} 1.0' in text
    assert f'scoutless_requests_total{{method="GET",{route},status="404"}} 1.0' in text
    assert 'scoutless_errors_total{kind="task_not_found"} 1.0' in text


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/tasks/12/prediction", 12),
        ("/v1/tasks/007/prediction", 7),
        (f"/v1/tasks/{2**63 - 1}/prediction", 2**63 - 1),
        (f"/v1/tasks/{2**63}/prediction", None),
        ("/v1/tasks/00000000000000000001/prediction", None),  # 20 digits: FastAPI's to parse
        ("/v1/tasks/+1/prediction", None),
        ("/v1/tasks/1_0/prediction", None),
        ("/v1/tasks/١/prediction", None),  # an Arabic-Indic digit
        ("/v1/tasks//prediction", None),
        ("/v1/tasks/1/2/prediction", None),
        ("/v1/tasks/1/predictions", None),
    ],
)
def test_only_plain_ids_take_the_short_way(path: str, expected: int | None) -> None:
    assert hot_routes._plain_id(path) == expected
