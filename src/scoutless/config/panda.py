"""PanDA/JEDI's own defaults and how a task's jobs reduce to its targets (``settings.panda``, ``settings.targets``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class PandaDefaults(BaseModel):
    """The defaults PanDA/JEDI applies when a task leaves a parameter unset."""

    cpu_efficiency_percent: float = Field(90.0, gt=0, le=100)
    base_walltime_s: float = Field(600.0, ge=0)
    core_power_hs06: float = Field(
        10.0, gt=0, description="HS06 per core when the site's is unknown"
    )
    min_ramcount_mb_per_core: float = Field(
        0.0, ge=0, description="SCOUT_RAMCOUNT_MIN: floor of the memory target"
    )


class TargetSettings(BaseModel):
    """How the per-job values of a task are reduced to one robust task value, by PanDA's own rules."""

    memory_percentile: float = Field(75.0, gt=0, le=100)
    memory_margin: float = Field(1.10, ge=1.0)
    cputime_percentile: float = Field(95.0, gt=0, le=100)
    cputime_margin: float = Field(1.5, ge=1.0)
    cputime_min_events_per_core: int = Field(10, ge=0)
    cputime_long_job_s: float = Field(6 * 3600.0, gt=0)
    walltime_percentile: float = Field(95.0, gt=0, le=100)
    n_scouts: int = Field(10, ge=1, description="the first N jobs of a task are its scouts")
    min_jobs_per_task: int = Field(3, ge=1, description="fewer finished jobs: no target")
