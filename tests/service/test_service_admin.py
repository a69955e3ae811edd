"""POST /v1/admin/reload: roles, allowed folders, errors that reveal no path, every worker
following a reload (two apps sharing the pointer file, as ``serve --workers 2`` runs them)."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient
from service_fakes import TOKEN, fake_loader, task

from scoutless.config import Settings
from scoutless.service.app import create_app

ADMIN = {"Authorization": "Bearer sesame-admin-0123456789"}
PREDICT = {"Authorization": f"Bearer {TOKEN}"}


def _settings(tmp_path, **service) -> Settings:
    tokens = f"ops admin {ADMIN['Authorization'][7:]};tester predict,read {TOKEN}"
    return Settings(service={"tokens": tokens, "reload_roots": [tmp_path / "bundles"], **service})


def _app(tmp_path, source=None, **options):
    for name in ("v1", "v2"):
        (tmp_path / "bundles" / name).mkdir(parents=True, exist_ok=True)
    (tmp_path / "elsewhere").mkdir(exist_ok=True)
    return create_app(
        source or tmp_path / "bundles" / "v1", loader=fake_loader,
        db_url=f"sqlite:///{tmp_path}/db", settings=_settings(tmp_path), **options,
    )  # fmt: skip


def test_reload_needs_the_admin_role(tmp_path) -> None:
    with TestClient(_app(tmp_path)) as client:
        assert client.post("/v1/admin/reload", json={}).status_code == 401
        wrong = {"Authorization": "Bearer nope-nope-nope-nope"}
        assert client.post("/v1/admin/reload", json={}, headers=wrong).status_code == 401
        assert client.post("/v1/admin/reload", json={}, headers=PREDICT).status_code == 403
        body = {"bundle": str(tmp_path / "bundles" / "v2")}
        r = client.post("/v1/admin/reload", headers=ADMIN, json=body)
        assert r.status_code == 200, r.text
        assert (r.json()["previous_version"], r.json()["model_version"]) == ("v1", "v2")
        answer = client.post("/v1/predict", headers=PREDICT, json={"task": task()}).json()
        assert answer["model_version"] == "v2"


def test_reload_errors_do_not_say_which_paths_exist(tmp_path) -> None:
    with TestClient(_app(tmp_path)) as client:
        refusals = []
        for path in (tmp_path / "elsewhere", tmp_path / "nowhere", "/etc", "../../etc"):
            r = client.post("/v1/admin/reload", headers=ADMIN, json={"bundle": str(path)})
            assert r.status_code == 403, r.text
            refusals.append(r.json()["detail"][0]["msg"])
        assert len(set(refusals)) == 1 and "elsewhere" not in refusals[0]
        missing = str(tmp_path / "bundles" / "v9")  # allowed, but no bundle there
        r = client.post("/v1/admin/reload", headers=ADMIN, json={"bundle": missing})
        assert r.status_code == 422
        assert "error id" in r.json()["detail"][0]["msg"] and missing not in r.text
        model = client.get("/v1/model", headers=PREDICT).json()
        assert model["model_version"] == "v1" and str(tmp_path) not in str(model)


def test_a_registry_service_reloads_its_champion_only(tmp_path) -> None:
    registry = tmp_path / "registry"
    for version in ("v1", "v2"):
        (registry / "versions" / version).mkdir(parents=True)
    (registry / "champion").write_text("v1")
    with TestClient(_app(tmp_path, registry, poll_s=3600)) as client:
        other = {"bundle": str(registry / "versions" / "v2")}
        r = client.post("/v1/admin/reload", headers=ADMIN, json=other)
        assert r.status_code == 409 and "promote" in r.json()["detail"][0]["msg"]
        (registry / "champion").write_text("v2")
        r = client.post("/v1/admin/reload", json={}, headers=ADMIN)
        assert r.json()["model_version"] == "v2"
        (registry / "champion").write_text("v1")  # a rollback: a reload is never pinned
        again = client.post("/v1/admin/reload", json={}, headers=ADMIN)
        assert again.json()["model_version"] == "v1"


def test_every_worker_follows_a_reload(tmp_path) -> None:
    pointer = str(tmp_path / "serve.pointer")
    first = TestClient(_app(tmp_path, pointer=pointer, poll_s=0.05))
    second = TestClient(_app(tmp_path, pointer=pointer, poll_s=0.05))
    with first, second:
        body = {"bundle": str(tmp_path / "bundles" / "v2")}
        assert first.post("/v1/admin/reload", headers=ADMIN, json=body).status_code == 200
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if second.get("/v1/model", headers=PREDICT).json()["model_version"] == "v2":
                break
            time.sleep(0.05)
        assert second.get("/v1/model", headers=PREDICT).json()["model_version"] == "v2"


def test_without_an_admin_token_reload_is_refused(tmp_path) -> None:
    settings = Settings(service={"tokens": f"tester predict,read {TOKEN}"})
    app = create_app(tmp_path, loader=fake_loader, db_url=f"sqlite:///{tmp_path}/db",
                     settings=settings)  # fmt: skip
    with TestClient(app) as client:
        assert client.post("/v1/admin/reload", json={}, headers=PREDICT).status_code == 403
