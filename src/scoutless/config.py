"""One typed settings object: every default scoutless uses lives here.

Values come from (highest first) explicit arguments, ``SCOUTLESS_*`` environment variables
(nested with ``__``, e.g. ``SCOUTLESS_PANDA__CPU_EFFICIENCY=80``), then these defaults.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class PandaDefaults(BaseModel):
    """The defaults PanDA/JEDI applies when a task leaves a parameter unset."""

    cpu_efficiency_percent: float = Field(90.0, gt=0, le=100)
    base_walltime_s: float = Field(600.0, ge=0)
    core_power_hs06: float = Field(
        10.0, gt=0, description="HS06 per core when the site's is unknown"
    )
    user_ramcount_mb_per_core: float = Field(2000.0, gt=0)
    min_ramcount_mb_per_core: float = Field(
        0.0, ge=0, description="SCOUT_RAMCOUNT_MIN: floor of the memory target"
    )


class TargetSettings(BaseModel):
    """How the per-job values of a task are reduced to one robust task value (DESIGN.md §2)."""

    memory_percentile: float = Field(75.0, gt=0, le=100)
    memory_margin: float = Field(1.10, ge=1.0)
    cputime_percentile: float = Field(95.0, gt=0, le=100)
    cputime_margin: float = Field(1.5, ge=1.0)
    cputime_min_events_per_core: int = Field(10, ge=0)
    cputime_long_job_s: float = Field(6 * 3600.0, gt=0)
    walltime_percentile: float = Field(95.0, gt=0, le=100)
    n_scouts: int = Field(10, ge=1, description="the first N jobs of a task are its scouts")
    min_jobs_per_task: int = Field(3, ge=1, description="fewer finished jobs: no target")


class HistorySettings(BaseModel):
    """History features (``scoutless.features.history``) and the served-prediction guard."""

    last_k: int = Field(10, ge=2, description="quantiles over a key's last k finished jobs")
    ewm_halflife_jobs: float = Field(3.0, gt=0, description="half-life in finished jobs")
    quantiles: tuple[float, float, float] = (0.1, 0.5, 0.9)
    guard_min_rows: int = Field(
        50, ge=1, description="fewer validation rows: serve the model unadjusted"
    )


class SplitSettings(BaseModel):
    """How rows are held out: the table's test split, then the parts of its training rows."""

    test_fraction: float = Field(0.15, gt=0, lt=1, description="test share, random and time")
    fit_fraction: float = Field(0.70, gt=0, description="training rows the models are fitted on")
    validation_fraction: float = Field(
        0.15, gt=0, description="early stopping, tuning, temperature and the champion"
    )
    calibration_fraction: float = Field(
        0.15, gt=0, description="held out for the risk and safe policies"
    )

    def part_fractions(self) -> dict[str, float]:
        return {
            "fit": self.fit_fraction,
            "validation": self.validation_fraction,
            "calibration": self.calibration_fraction,
        }


class TrainingSettings(BaseModel):
    """Sizes that shape a training table and a bundle."""

    min_train_values: int = Field(
        5, ge=1, description="a trace target with fewer training values is dropped"
    )
    reference_rows: int = Field(
        5000, ge=1, description="training rows kept in a bundle as the drift reference"
    )


class ServiceSettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    max_batch: int = Field(10_000, ge=1, description="larger batches are refused with 413")
    admin_token: str | None = Field(
        None, description="bearer token for /v1/admin/*; unset: disabled"
    )
    remote_timeout_s: float = Field(2.0, gt=0)
    default_alpha: float = Field(0.05, gt=0, lt=1)
    default_safe_recall: float = Field(0.9, gt=0, le=1)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SCOUTLESS_", env_nested_delimiter="__", extra="ignore"
    )

    workdir: Path = Path("scoutless-work")
    db_url: str | None = Field(
        None,
        description="SQLAlchemy URL of the PanDA-compatible history; default: SQLite in workdir",
    )
    bins_file: Path | None = Field(None, description="TOML overriding the shipped default bins")
    seed: int = 42
    panda: PandaDefaults = PandaDefaults()
    targets: TargetSettings = TargetSettings()
    splits: SplitSettings = SplitSettings()
    training: TrainingSettings = TrainingSettings()
    service: ServiceSettings = ServiceSettings()
    history: HistorySettings = HistorySettings()

    def resolved_db_url(self) -> str:
        """The configured database, or the embedded default: one SQLite file in the work dir."""
        if self.db_url:
            return self.db_url
        return f"sqlite:///{(self.workdir / 'history.sqlite').resolve()}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
