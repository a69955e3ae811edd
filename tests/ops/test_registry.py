from __future__ import annotations

import os
from pathlib import Path

import pytest
from ops_fakes import make_fake_bundle

from scoutless.ops import registry as reg

pytestmark = pytest.mark.usefixtures("shallow_registry")


def _registry_with(tmp_path: Path, *versions: str) -> Path:
    root = reg.init_registry(tmp_path / "reg")
    for v in versions:
        reg.register(root, make_fake_bundle(tmp_path / "src" / v, v))
    return root


def test_register_copies_bundle_under_its_manifest_version(tmp_path: Path) -> None:
    root = _registry_with(tmp_path, "v1")
    assert (root / "versions" / "v1" / "model.bin").read_bytes() == b"weights of v1"
    assert [v.version for v in reg.list_versions(root)] == ["v1"]
    assert reg.champion_version(root) is None
    with pytest.raises(reg.RegistryError, match="exists already"):
        reg.register(root, tmp_path / "src" / "v1")


def test_promote_and_rollback_follow_a_stack(tmp_path: Path) -> None:
    root = _registry_with(tmp_path, "v1", "v2", "v3")
    for v in ("v1", "v2", "v3"):
        reg.promote(root, v, reason=f"test {v}")
    assert reg.resolve_champion(root) == root / "versions" / "v3"
    assert reg.rollback(root) == "v2"
    assert reg.rollback(root) == "v1"
    with pytest.raises(reg.RegistryError, match="no earlier champion"):
        reg.rollback(root)
    history = reg.read_history(root)
    assert [(h["action"], h["version"], h["previous"]) for h in history] == [
        ("promote", "v1", None), ("promote", "v2", "v1"), ("promote", "v3", "v2"),
        ("rollback", "v2", "v3"), ("rollback", "v1", "v2"),
    ]  # fmt: skip
    listed = {v.version: v.is_champion for v in reg.list_versions(root)}
    assert listed == {"v1": True, "v2": False, "v3": False}


def test_promote_refuses_incomplete_or_unknown_bundles(tmp_path: Path) -> None:
    root = _registry_with(tmp_path, "v1")
    reg.promote(root, "v1")
    broken = root / "versions" / "broken"
    broken.mkdir()
    with pytest.raises(reg.RegistryError, match=r"no manifest\.json"):
        reg.promote(root, "broken")
    (broken / "manifest.json").write_text("{not json")
    with pytest.raises(reg.RegistryError, match="cannot be read as JSON"):
        reg.promote(root, "broken")
    with pytest.raises(reg.RegistryError, match="no version 'nope'"):
        reg.promote(root, "nope")
    assert reg.champion_version(root) == "v1"


def test_deep_check_refuses_a_bundle_that_does_not_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _registry_with(tmp_path, "v1")
    monkeypatch.undo()  # the real check: load_bundle fails on a manifest-only folder
    with pytest.raises(reg.RegistryError, match="does not load"):
        reg.promote(root, "v1")
    assert reg.champion_version(root) is None


def test_pointer_write_crash_keeps_old_champion(tmp_path: Path, monkeypatch) -> None:
    root = _registry_with(tmp_path, "v1", "v2")
    reg.promote(root, "v1")

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        reg.promote(root, "v2")
    monkeypatch.undo()
    assert reg.resolve_champion(root).name == "v1"
    assert not [p for p in root.iterdir() if p.name.startswith(".registry.json")]
    assert len(reg.read_history(root)) == 1
