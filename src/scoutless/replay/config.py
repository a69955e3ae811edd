"""The replay's settings: PanDA's own constants, each with the default JEDI/the pilot uses.

Part of :class:`scoutless.config.Settings` (``settings.replay``); ``--config replay.toml``
overrides any of them (top-level keys or a ``[replay]`` table). A bad value is refused
with one message that names the key, e.g. ``replay.resource_types.SCORE.cores``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from scoutless.config import STRATEGY_NAMES, ReplaySettings, ResourceType

__all__ = [
    "STRATEGY_NAMES",
    "ReplayConfigError",
    "ReplaySettings",
    "ResourceType",
    "replay_settings",
]


class ReplayConfigError(ValueError):
    """A replay configuration that cannot be used; the message names the key."""


def _first_error(exc: ValidationError, prefix: str) -> ReplayConfigError:
    err = exc.errors()[0]
    key = ".".join(str(p) for p in (prefix, *err["loc"]))
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return ReplayConfigError(f"{key}: {err['msg']} (got {err.get('input')!r}){more}")


def replay_settings(
    base: ReplaySettings | None = None,
    path: Path | None = None,
    **overrides: Any,
) -> ReplaySettings:
    """``base`` with a TOML file's values, then keyword overrides; errors name the key."""
    values: dict[str, Any] = (base or ReplaySettings()).model_dump()
    source = "replay"
    if path is not None:
        try:
            loaded = tomllib.loads(Path(path).read_text())
        except OSError as exc:
            raise ReplayConfigError(f"{path}: cannot read replay config: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ReplayConfigError(f"{path}: not valid TOML: {exc}") from exc
        loaded = loaded.get("replay", loaded)
        values = _merge(values, loaded)
        source = f"{path}: replay"
    values = _merge(values, {k: v for k, v in overrides.items() if v is not None})
    try:
        return ReplaySettings.model_validate(values)
    except ValidationError as exc:
        raise _first_error(exc, source) from exc


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Nested dicts merge key by key (one resource type's ``cores`` keeps its other fields)."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out
