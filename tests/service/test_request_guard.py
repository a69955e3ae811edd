"""Requests a web page could make a browser send, refused at the door: non-JSON writes
(415, every mode) and, in the loopback mode, Host names other than this machine's (421:
DNS rebinding). The real app, in process."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from service_fakes import LOOPBACK, TOKEN, FakePredictor, task

from scoutless.config import Settings
from scoutless.ops.prediction_log import PredictionLog
from scoutless.service.app import create_app
from scoutless.service.request_guard import host_name, is_json

LOCAL = "http://127.0.0.1:8000"
FOREIGN = {"origin": "https://evil.example"}


def _client(tmp_path, base_url: str = LOCAL, **service) -> TestClient:  # type: ignore[no-untyped-def]
    app = create_app(predictor=FakePredictor(), db_url=f"sqlite:///{tmp_path}/db",
                     settings=Settings(service=service))  # fmt: skip
    return TestClient(app, client=LOOPBACK, base_url=base_url)


def _kind(r) -> str:  # type: ignore[no-untyped-def]
    return r.json()["detail"][0]["type"]


def test_loopback_mode_refuses_what_a_foreign_page_can_send(tmp_path) -> None:
    body = b'{"task": {"corecount": 8}}'
    with _client(tmp_path) as client:
        plain = client.post("/v1/predict", content=body,
                            headers={**FOREIGN, "content-type": "text/plain"})  # fmt: skip
        form = client.post("/v1/admin/reload", content=b"",
                           headers={**FOREIGN, "content-type": "application/x-www-form-urlencoded"})  # fmt: skip
        bare = client.post("/v1/admin/reload", headers=FOREIGN)  # fetch() without a body
        multipart = client.post("/v1/predict", files={"f": ("t.json", body)})
        for r in (plain, form, bare, multipart):
            assert (r.status_code, _kind(r)) == (415, "unsupported_media_type"), r.text
            assert "application/json" in r.json()["detail"][0]["msg"]
        assert client.post("/v1/predict", json={"task": task()}).status_code == 200
        assert client.post("/v1/admin/reload", json={}).status_code != 415
    assert PredictionLog(f"sqlite:///{tmp_path}/db").count() == 1


def test_loopback_mode_refuses_what_a_browser_marks_cross_site(tmp_path) -> None:
    with _client(tmp_path) as client:
        r = client.get("/v1/tasks/1/prediction", headers={"sec-fetch-site": "cross-site"})
        assert (r.status_code, _kind(r)) == (403, "cross_site_request")
        local = client.get("/v1/model", headers={"sec-fetch-site": "same-origin"})
        assert local.status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example",
                                  "localhost.evil.example:80"])  # fmt: skip
def test_loopback_mode_refuses_other_host_names(tmp_path, host: str) -> None:
    with _client(tmp_path) as client:
        for r in (client.get("/v1/model", headers={"host": host}),
                  client.post("/v1/predict", json={"task": task()}, headers={"host": host}),
                  client.get("/healthz", headers={"host": host})):  # fmt: skip
            assert (r.status_code, _kind(r)) == (421, "misdirected_request"), r.text
            assert host not in r.text  # nothing of the request echoed
    assert PredictionLog(f"sqlite:///{tmp_path}/db").count() == 0


@pytest.mark.parametrize("base_url", ["http://localhost:8000", "http://127.0.0.1",
                                      "http://[::1]:8000", "http://LocalHost"])  # fmt: skip
def test_loopback_mode_answers_this_machines_names(tmp_path, base_url: str) -> None:
    with _client(tmp_path, base_url) as client:
        assert client.post("/v1/predict", json={"task": task()}).status_code == 200
        assert client.get("/v1/model").status_code == 200


def test_allowed_hosts_add_names(tmp_path) -> None:
    with _client(tmp_path, "http://Box.Lan:8000", allowed_hosts=["box.lan"]) as client:
        assert client.get("/v1/model").status_code == 200
        assert client.get("/v1/model", headers={"host": "localhost:1"}).status_code == 200
        assert client.get("/v1/model", headers={"host": "other.lan"}).status_code == 421


def test_with_tokens_any_host_unless_allowed_hosts_say_otherwise(tmp_path) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    tokens = f"jedi predict,read {TOKEN}"
    with _client(tmp_path, "http://scoutless.site.org", tokens=tokens) as client:
        assert client.get("/v1/model", headers=auth).status_code == 200
        plain = client.post("/v1/predict", content=b"{}", headers={**auth, "content-type": "text/plain"})  # fmt: skip
        assert plain.status_code == 415  # JSON only: in every mode
    with _client(tmp_path, "http://other.org", tokens=tokens, allowed_hosts=["scoutless.site.org"]) as client:  # fmt: skip
        assert client.get("/v1/model", headers=auth).status_code == 421


@given(st.sampled_from(["application/json", "Application/JSON; charset=utf-8",
                        "application/problem+json", " application/json ;x=1"]))  # fmt: skip
def test_json_media_types(content_type: str) -> None:
    assert is_json(content_type.encode())


@given(st.sampled_from(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                        "text/json+", "application/jsonp", "", "text/x+json"]))  # fmt: skip
def test_other_media_types(content_type: str) -> None:
    assert not is_json(content_type.encode())


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789.-", min_size=1, max_size=30),
       st.integers(0, 65535))  # fmt: skip
def test_host_name_drops_the_port(name: str, port: int) -> None:
    assert host_name(f"{name}:{port}".encode()) == name
    assert host_name(name.upper().encode()) == name
    assert host_name(f"[::1]:{port}".encode()) == "[::1]"
