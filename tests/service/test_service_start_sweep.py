"""A service starting on a registry or a bundle folder removes the staging that killed
writers left there (``.NAME.tmp-*`` folders, ``.registry.json.*`` files)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from service_fakes import LOOPBACK, fake_loader

from crash import age, hidden
from scoutless.service.app import create_app


def _serve(source: Path, tmp_path: Path) -> None:
    app = create_app(source, loader=fake_loader, db_url=f"sqlite:///{tmp_path}/db", poll_s=3600)
    with TestClient(app, client=LOOPBACK, base_url="http://127.0.0.1") as client:
        assert client.get("/v1/model").status_code == 200


def test_serving_a_registry_sweeps_it(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    versions = registry / "versions"
    (versions / "v1").mkdir(parents=True)
    (registry / "champion").write_text("v1")
    leftovers = [versions / ".staging-ab12cd34", versions / ".v2.tmp-0123abcd"]
    for folder in leftovers:
        (folder / "model.json").parent.mkdir()
        (folder / "model.json").write_text("{}")
    leftovers.append(registry / ".registry.json.k2j4h5g6")
    leftovers[-1].write_text("{")
    age(*leftovers)
    _serve(registry, tmp_path)
    assert hidden(registry) == [] and hidden(versions) == []


def test_serving_a_bundle_folder_sweeps_beside_it(tmp_path: Path) -> None:
    (tmp_path / "b1").mkdir()
    leftover = tmp_path / ".b1.tmp-0123abcd"
    leftover.mkdir()
    age(leftover)
    _serve(tmp_path / "b1", tmp_path)
    assert not leftover.exists()
