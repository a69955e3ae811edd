"""The replay's settings: PanDA's own constants, each with the default JEDI/the pilot uses.

Part of :class:`scoutless.config.Settings` (``settings.replay``); ``--config replay.toml``
overrides any of them (top-level keys or a ``[replay]`` table). A bad value is refused
with one message that names the key, e.g. ``replay.resource_types.SCORE.cores``.
"""

from __future__ import annotations

import itertools
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

STRATEGY_NAMES: tuple[str, ...] = ("scouts", "predicted", "hybrid")


class ReplayConfigError(ValueError):
    """A replay configuration that cannot be used; the message names the key."""


class ResourceType(BaseModel):
    """One PanDA resource type: slots of this memory per core (``cores`` None: sized to load)."""

    model_config = ConfigDict(extra="forbid")

    mb_per_core: float = Field(gt=0)
    multicore: bool
    cores: int | None = Field(None, ge=1, description="slot cores; None: from the history load")


def _panda_resource_types() -> dict[str, ResourceType]:
    return {
        "SCORE": ResourceType(mb_per_core=2000, multicore=False),
        "MCORE": ResourceType(mb_per_core=2000, multicore=True),
        "SCORE_HIMEM": ResourceType(mb_per_core=3000, multicore=False),
        "MCORE_HIMEM": ResourceType(mb_per_core=3000, multicore=True),
    }


class ReplaySettings(BaseModel):
    """Every constant of the replay, with PanDA's default."""

    model_config = ConfigDict(extra="forbid")

    strategies: list[str] = Field(default_factory=lambda: list(STRATEGY_NAMES))
    # scouts (JEDI)
    n_scouts: int = Field(10, ge=1, description="scout jobs per task")
    avalanche_min_finished_share: float = Field(
        0.5, gt=0, le=1, description="early avalanche once this share of scouts finished (5/10)"
    )
    check_interval_s: float = Field(600.0, gt=0, description="JEDI's assessment period")
    scout_priority: bool = Field(True, description="scouts jump the queue (PanDA boosts them)")
    scout_min_success_rate: float | None = Field(
        None, ge=0, le=1, description="task's scoutSuccessRate/10; None: only 0 successes break"
    )
    exhausted_ram_mb_per_core: float = Field(
        4000.0, gt=0, description="scout ramCount above this while the request was below: exhausted"
    )
    exhausted_min_new_jobs: int = Field(20, ge=0, description="JEDI's nNewJobsCutoff")
    exhausted_resume_after_s: float | None = Field(
        None, ge=0, description="an operator resumes an exhausted task after this; None: never"
    )
    retune_min_jobs: int = Field(5, ge=1, description="finished jobs before the re-tuning")
    # execution and failures (pilot, batch system)
    memory_kill_factor: float = Field(
        2.0, gt=0, description="k: killed when maxPSS > k x allocation (1 = strict cgroups)"
    )
    queue_maxtime_s: float | None = Field(
        None, gt=0, description="queue walltime limit; None: the longest job of the history"
    )
    max_attempts: int = Field(5, ge=1, description="attempts per job before it fails for good")
    ram_ladder_mb_per_core: list[float] = Field(
        default_factory=lambda: [1000.0, 2000.0, 3000.0, 4000.0, 6000.0, 8000.0]
    )
    task_raise_share: float = Field(
        0.3, ge=0, le=1, description="task ramCount raised once more than this share needed it"
    )
    default_ram_mb_per_core: float = Field(
        2000.0, gt=0, description="allocation when the task requests no ramCount"
    )
    # the pool of job slots
    resource_types: dict[str, ResourceType] = Field(default_factory=_panda_resource_types)
    target_utilisation: float = Field(
        0.5, gt=0, le=1, description="auto-sized pools: mean history load / cores"
    )
    cdf_points: int = Field(101, ge=2, description="quantiles kept per CDF in replay.json")
    workers: int = Field(1, ge=1, description="strategies replayed in parallel processes")

    @field_validator("strategies")
    @classmethod
    def _known_strategies(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in STRATEGY_NAMES]
        if unknown:
            raise ValueError(
                f"unknown strategy {unknown[0]!r}; expected {', '.join(STRATEGY_NAMES)}"
            )
        if not value:
            raise ValueError("at least one strategy is needed")
        return list(dict.fromkeys(value))

    @field_validator("ram_ladder_mb_per_core")
    @classmethod
    def _increasing(cls, value: list[float]) -> list[float]:
        if not value or any(b <= a for a, b in itertools.pairwise(value)):
            raise ValueError("must be a non-empty, strictly increasing list")
        return value

    @field_validator("resource_types")
    @classmethod
    def _some_types(cls, value: dict[str, ResourceType]) -> dict[str, ResourceType]:
        if not any(not t.multicore for t in value.values()) or not any(
            t.multicore for t in value.values()
        ):
            raise ValueError("need at least one single-core and one multi-core resource type")
        return value


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
