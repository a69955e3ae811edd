"""Where bundles and registries keep things on disk, and how to read them back.

The lowest layer both :mod:`scoutless.bundle` (loading) and :mod:`scoutless.ops.registry`
(registering, promoting) build on, so neither has to import the other's layer upwards.

A bundle folder holds ``manifest.json``; a registry folder holds ``versions/<id>/`` (one
bundle each) and ``registry.json``: the champion (the version to serve) and the history of
promotions and rollbacks in one file, replaced in one atomic step (ops/registry.py).
Registries from before it kept a ``champion`` pointer file and ``history.jsonl``: they are
read where ``registry.json`` does not exist yet, and the first change writes it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MANIFEST_FILE = "manifest.json"
#: the champion and the history, one JSON object ({"champion": id, "history": [...]})
REGISTRY_FILE = "registry.json"
#: the pointer of registries from before registry.json (read only where it is absent)
CHAMPION_FILE = "champion"
VERSIONS_DIR = "versions"


class BundleError(ValueError):
    """A bundle folder that is missing a part or names something it does not hold."""


class RegistryError(LookupError):
    """A registry without what was asked of it (a champion, a version, a valid bundle)."""


def read_manifest(bundle: str | Path) -> dict[str, Any]:
    """The bundle's manifest.json as a dict; BundleError when missing or not a JSON object."""
    file = Path(bundle) / MANIFEST_FILE
    if not file.is_file():
        raise BundleError(f"{bundle} is not a complete bundle: no {MANIFEST_FILE}")
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise BundleError(f"{file}: cannot be read as JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise BundleError(f"{file}: expected a JSON object, got {type(data).__name__}")
    return data


def is_registry(path: str | Path) -> bool:
    return (Path(path) / VERSIONS_DIR).is_dir()


def champion_version(path: str | Path) -> str | None:
    """The version id the registry names as champion, or None before the first promotion."""
    state = Path(path) / REGISTRY_FILE
    if state.exists():
        champion = read_registry_file(state).get("champion")
        return str(champion) if champion else None
    pointer = Path(path) / CHAMPION_FILE
    if not pointer.exists():
        return None
    return pointer.read_text().strip() or None


def read_registry_file(file: Path) -> dict[str, Any]:
    """``registry.json`` as a dict with a ``history`` list; RegistryError if it is not."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RegistryError(f"{file}: cannot be read as JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("history"), list):
        raise RegistryError(f"{file}: expected an object with a 'history' list")
    return data


def resolve_champion(path: str | Path) -> Path:
    """The bundle folder to serve: the champion of a registry, or ``path`` if it is a bundle."""
    path = Path(path)
    if not is_registry(path):
        return path
    version = champion_version(path)
    if version is None:
        raise RegistryError(f"registry {path} has no champion yet")
    bundle = path / VERSIONS_DIR / version
    if not bundle.is_dir():
        raise RegistryError(f"registry {path}: champion {version!r} has no folder {bundle}")
    return bundle
