"""Model registry: every bundle version kept, the champion and its history in one file.

Layout of a registry folder ``REG``::

    REG/versions/<version_id>/   a complete bundle (manifest.json, encoders, models …)
    REG/registry.json            {"champion": id, "history": [one record per promotion,
                                 rollback, calibration …]}

Every change rewrites ``registry.json`` whole: written beside it, fsynced, renamed over it
(``atomic_write_text``), under a lock file (``REG/.lock``) so two changes do not lose one
another. The champion and the history therefore change in one atomic step: a crash or a
full disk at any point leaves both as they were before, or both as after, never a champion
the history does not know (which used to send a rollback to the wrong version). The
service polls :func:`resolve_champion` to follow promotions. Promotions and rollbacks form
a stack: ``rollback`` returns to the champion that the current one replaced, however many
rollbacks came before. A registry from before ``registry.json`` (``champion`` and
``history.jsonl``) is read as it is; its first change writes ``registry.json``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scoutless.atomic import (
    atomic_write_text,
    fsync_dir,
    fsync_tree,
    hold,
    release,
    remove_if_abandoned,
    sweep_folder,
)
from scoutless.layout import (
    CHAMPION_FILE,
    REGISTRY_FILE,
    VERSIONS_DIR,
    BundleError,
    RegistryError,
    champion_version,
    is_registry,
    read_manifest,
    read_registry_file,
    resolve_champion,
)

__all__ = [  # the pointer's reading side lives in scoutless.layout; re-exported here
    "CHAMPION_FILE",
    "HISTORY_FILE",
    "REGISTRY_FILE",
    "VERSIONS_DIR",
    "RegistryError",
    "VersionInfo",
    "champion_stack",
    "champion_version",
    "discard_staging",
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
    "sweep_registry",
    "verify_bundle",
]
#: the history of registries from before registry.json (read only where it is absent)
HISTORY_FILE = "history.jsonl"
_STAGING_PREFIX = ".staging-"
#: staging folders this process writes into (held: no sweep takes them), by path
_HELD: dict[Path, int | None] = {}


@dataclass(frozen=True)
class VersionInfo:
    """One registered bundle, as ``registry list`` shows it."""

    version: str
    path: Path
    created_at: str | None
    is_champion: bool
    manifest: dict[str, Any]


def init_registry(path: str | Path) -> Path:
    """Create the registry folder layout (idempotent), without what crashed writers left."""
    path = Path(path)
    (path / VERSIONS_DIR).mkdir(parents=True, exist_ok=True)
    sweep_registry(path)
    return path


def sweep_registry(path: str | Path) -> list[Path]:
    """Remove the staging that writers killed mid-write left in the registry (versions being
    copied or trained, ``registry.json``'s temporary files); never a live writer's."""
    reg, removed = Path(path), []
    versions = reg / VERSIONS_DIR
    if versions.is_dir():
        removed += [p for p in versions.glob(f"{_STAGING_PREFIX}*") if remove_if_abandoned(p)]
        removed += sweep_folder(versions)
    return removed + sweep_folder(reg)


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


@contextlib.contextmanager
def _locked(reg: Path) -> Iterator[None]:
    """One change of registry.json at a time (read, change, replace)."""
    with open(reg / ".lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _legacy_history(reg: Path) -> list[dict[str, Any]]:
    """history.jsonl of a registry from before registry.json (torn last lines skipped)."""
    file = reg / HISTORY_FILE
    if not file.exists():
        return []
    records = []
    for line in file.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def _read_state(reg: Path) -> dict[str, Any]:
    """{"champion": id or None, "history": [...]}: registry.json, or the legacy files."""
    file = reg / REGISTRY_FILE
    if file.exists():
        return read_registry_file(file)
    return {"champion": champion_version(reg), "history": _legacy_history(reg)}


def _change(reg: Path, record: dict[str, Any], champion: str | None = None) -> None:
    """Append ``record`` (and set the champion) in one atomic replacement of registry.json."""
    reg.mkdir(parents=True, exist_ok=True)
    with _locked(reg):
        state = _read_state(reg)
        state = {
            "champion": champion or state.get("champion"),
            "history": [*state["history"], record],
        }
        atomic_write_text(reg / REGISTRY_FILE, json.dumps(state, indent=1, sort_keys=True))


def record_event(path: str | Path, record: dict[str, Any]) -> None:
    """Append one record to the registry's history (a calibration registered …), durably."""
    _change(Path(path), record)


def read_history(path: str | Path) -> list[dict[str, Any]]:
    """Promotion, rollback (and other) records, oldest first."""
    reg = Path(path)
    if not (reg / REGISTRY_FILE).exists() and not (reg / HISTORY_FILE).exists():
        return []
    return list(_read_state(reg)["history"])


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_version_id() -> str:
    """Sortable and unique: UTC time to the second plus a random suffix."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def staging_dir(path: str | Path) -> Path:
    """A fresh folder inside the registry for writing a bundle before it is registered."""
    versions = init_registry(path) / VERSIONS_DIR
    staging = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=versions))
    _HELD[staging] = hold(staging)  # until discard_staging, or this process's end
    return staging


def discard_staging(staging: Path) -> None:
    """Remove a folder :func:`staging_dir` made, and let it go."""
    shutil.rmtree(staging, ignore_errors=True)
    release(_HELD.pop(Path(staging), None))


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
        fsync_tree(bundle)
        os.rename(bundle, target)
    else:
        tmp = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=reg / VERSIONS_DIR))
        held = hold(tmp)
        try:
            shutil.copytree(bundle, tmp, dirs_exist_ok=True)
            fsync_tree(tmp)  # the files on disk before the name that says they are complete
            os.rename(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        finally:
            release(held)
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
    record = {"time": _now(), "action": action, "version": version, "previous": previous}
    _change(reg, {**record, "reason": reason, **extra}, champion=version)


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
