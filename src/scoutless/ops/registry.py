"""Model registry: every bundle version kept, one atomic champion pointer.

Layout of a registry folder ``REG``::

    REG/versions/<version_id>/   a complete bundle (manifest.json, encoders, models …)
    REG/champion                 text file holding the champion's version id
    REG/history.jsonl            one JSON line per promotion / rollback

The pointer is replaced with ``os.replace`` so readers see the old or the new id, never
a torn one; the service polls :func:`resolve_champion` to follow promotions.
"""

from __future__ import annotations

from pathlib import Path

CHAMPION_FILE = "champion"
VERSIONS_DIR = "versions"


class RegistryError(LookupError):
    pass


def is_registry(path: str | Path) -> bool:
    return (Path(path) / VERSIONS_DIR).is_dir()


def resolve_champion(path: str | Path) -> Path:
    """The bundle folder to serve: the champion of a registry, or ``path`` if it is a bundle."""
    path = Path(path)
    if not is_registry(path):
        return path
    pointer = path / CHAMPION_FILE
    if not pointer.exists():
        raise RegistryError(f"registry {path} has no champion yet")
    version = pointer.read_text().strip()
    bundle = path / VERSIONS_DIR / version
    if not bundle.is_dir():
        raise RegistryError(f"registry {path}: champion {version!r} has no folder {bundle}")
    return bundle
