"""POST /v1/admin/reload: token checks and the swap, in process."""

from __future__ import annotations

from fastapi.testclient import TestClient
from service_fakes import fake_loader, task

from scoutless.config import Settings
from scoutless.service.app import create_app


def _app(tmp_path, token: str | None):
    for name in ("v1", "v2"):
        (tmp_path / name).mkdir()
    settings = Settings(service={"admin_token": token})
    return create_app(
        tmp_path / "v1", loader=fake_loader, db_url=f"sqlite:///{tmp_path}/db", settings=settings
    )


def test_reload_needs_the_token(tmp_path) -> None:
    with TestClient(_app(tmp_path, "sesame")) as client:
        assert client.post("/v1/admin/reload").status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert client.post("/v1/admin/reload", headers=wrong).status_code == 401
        ok = {"Authorization": "Bearer sesame"}
        r = client.post("/v1/admin/reload", headers=ok, json={"bundle": str(tmp_path / "v2")})
        assert r.status_code == 200, r.text
        assert r.json()["previous_version"] == "v1"
        assert r.json()["model_version"] == "v2"
        assert client.post("/v1/predict", json={"task": task()}).json()["model_version"] == "v2"
        missing = {"bundle": str(tmp_path / "v9")}
        r = client.post("/v1/admin/reload", headers=ok, json=missing)
        assert r.status_code == 422
        assert client.get("/v1/model").json()["model_version"] == "v2"


def test_reload_is_disabled_without_a_token(tmp_path) -> None:
    with TestClient(_app(tmp_path, None)) as client:
        r = client.post("/v1/admin/reload", headers={"Authorization": "Bearer x"})
        assert r.status_code == 403
