"""Model registry: every bundle version kept, one atomic champion pointer.

Layout of a registry folder ``REG``::

    REG/versions/<version_id>/   a complete bundle (manifest.json, encoders, models …)
    REG/champion                 text file holding the champion's version id
    REG/history.jsonl            one JSON line per promotion / rollback

The pointer is replaced with ``os.replace`` so readers see the old or the new id, never
a torn one; the service polls :func:`resolve_champion` to follow promotions.
Promotions and rollbacks form a stack: ``rollback`` returns to the champion that the
current one replaced, however many rollbacks came before.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scoutless.atomic import atomic_write_text, fsync_dir
from scoutless.layout import (
    CHAMPION_FILE,
    VERSIONS_DIR,
    BundleError,
    RegistryError,
    champion_version,
    is_registry,
    read_manifest,
    resolve_champion,
)

__all__ = [  # the pointer's reading side lives in scoutless.layout; re-exported here
    "CHAMPION_FILE",
    "HISTORY_FILE",
    "VERSIONS_DIR",
    "RegistryError",
    "VersionInfo",
    "champion_stack",
    "champion_version",
    "init_registry",
    "is_registry",
    "list_versions",
    "new_version_id",
    "promote",
    "read_history",
    "register",
    "resolve_champion",
    "rollback",
    "staging_dir",
    "verify_bundle",
]
HISTORY_FILE = "history.jsonl"
_STAGING_PREFIX = ".staging-"


@dataclass(frozen=True)
class VersionInfo:
    """One registered bundle, as ``registry list`` shows it."""

    version: str
    path: Path
    created_at: str | None
    is_champion: bool
    manifest: dict[str, Any]


def init_registry(path: str | Path) -> Path:
    """Create the registry folder layout (idempotent)."""
    path = Path(path)
    (path / VERSIONS_DIR).mkdir(parents=True, exist_ok=True)
    return path


def _deep_check(bundle: Path) -> None:
    """Load the bundle with the serving code, so a broken one is refused before it serves."""
    from scoutless.bundle import load_bundle  # here: listing a registry needs no models

    try:
        load_bundle(bundle)
    except Exception as exc:
        raise RegistryError(f"{bundle}: bundle does not load: {exc}") from exc


def verify_bundle(bundle: str | Path) -> dict[str, Any]:
    """Manifest of a complete, loadable bundle; RegistryError otherwise."""
    try:
        manifest = read_manifest(bundle)
    except BundleError as exc:
        raise RegistryError(str(exc)) from exc
    _deep_check(Path(bundle))
    return manifest


def _append_history(path: Path, record: dict[str, Any]) -> None:
    with open(path / HISTORY_FILE, "a") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def record_event(path: str | Path, record: dict[str, Any]) -> None:
    """Append one record to the registry's history (a calibration registered …), durably."""
    _append_history(Path(path), record)


def read_history(path: str | Path) -> list[dict[str, Any]]:
    """Promotion and rollback records, oldest first (torn last lines are skipped)."""
    file = Path(path) / HISTORY_FILE
    if not file.exists():
        return []
    records = []
    for line in file.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_version_id() -> str:
    """Sortable and unique: UTC time to the second plus a random suffix."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def staging_dir(path: str | Path) -> Path:
    """A fresh folder inside the registry for writing a bundle before it is registered."""
    versions = init_registry(path) / VERSIONS_DIR
    return Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=versions))


def register(
    path: str | Path, bundle: str | Path, *, version: str | None = None, move: bool = False
) -> str:
    """Add a complete bundle as a new version (copied, or moved with ``move``); its id.

    The version appears in one ``rename``: a crash leaves no half-copied version.
    """
    reg = init_registry(path)
    bundle = Path(bundle)
    manifest = verify_bundle(bundle)
    version = version or str(manifest.get("version") or "") or new_version_id()
    if "/" in version or version.startswith(".") or version in ("", CHAMPION_FILE):
        raise RegistryError(f"version id {version!r} is not a valid folder name")
    target = reg / VERSIONS_DIR / version
    if target.exists():
        if target.resolve() == bundle.resolve():
            return version
        raise RegistryError(f"registry {reg}: version {version!r} exists already")
    if move:
        os.rename(bundle, target)
    else:
        tmp = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=reg / VERSIONS_DIR))
        try:
            shutil.copytree(bundle, tmp, dirs_exist_ok=True)
            os.rename(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    fsync_dir(reg / VERSIONS_DIR)
    return version


def list_versions(path: str | Path) -> list[VersionInfo]:
    """Registered versions, oldest first (by manifest time, then id)."""
    reg = Path(path)
    if not is_registry(reg):
        raise RegistryError(f"{reg} is not a registry (no {VERSIONS_DIR}/ folder)")
    champion = champion_version(reg)
    out = []
    for folder in sorted((reg / VERSIONS_DIR).iterdir()):
        if not folder.is_dir() or folder.name.startswith("."):
            continue
        try:
            manifest = read_manifest(folder)
        except BundleError:
            manifest = {}
        created = manifest.get("created_at") or manifest.get("created")
        out.append(VersionInfo(folder.name, folder, created, folder.name == champion, manifest))
    return sorted(out, key=lambda v: (str(v.created_at or ""), v.version))


def _set_champion(reg: Path, version: str, action: str, reason: str, **extra: Any) -> None:
    previous = champion_version(reg)
    atomic_write_text(reg / CHAMPION_FILE, version + "\n")
    record = {"time": _now(), "action": action, "version": version, "previous": previous}
    _append_history(reg, {**record, "reason": reason, **extra})


def promote(path: str | Path, version: str, *, reason: str = "", **extra: Any) -> str:
    """Make ``version`` the champion, after checking it is a complete, loadable bundle."""
    reg = Path(path)
    bundle = reg / VERSIONS_DIR / version
    if not bundle.is_dir():
        raise RegistryError(f"registry {reg}: no version {version!r} (looked in {bundle})")
    verify_bundle(bundle)
    if champion_version(reg) == version:
        return version
    _set_champion(reg, version, "promote", reason, **extra)
    return version


def champion_stack(path: str | Path) -> list[str]:
    """Champions in force, oldest first, replaying promotions (push) and rollbacks (pop)."""
    stack: list[str] = []
    for record in read_history(path):
        if record.get("action") == "promote":
            stack.append(record["version"])
        elif record.get("action") == "rollback" and stack:
            stack.pop()
    return stack


def rollback(path: str | Path, *, reason: str = "") -> str:
    """Return to the champion the current one replaced; the version id now serving."""
    reg = Path(path)
    stack = champion_stack(reg)
    if len(stack) < 2:
        raise RegistryError(f"registry {reg}: no earlier champion to roll back to")
    previous = stack[-2]
    verify_bundle(reg / VERSIONS_DIR / previous)
    _set_champion(reg, previous, "rollback", reason)
    return previous
