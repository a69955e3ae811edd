"""History features and the served-prediction guard (``settings.history``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class HistorySettings(BaseModel):
    """History features (``scoutless.features.history``) and the served-prediction guard."""

    last_k: int = Field(10, ge=2, description="quantiles over a key's last k finished jobs")
    ewm_halflife_jobs: float = Field(3.0, gt=0, description="half-life in finished jobs")
    quantiles: tuple[float, float, float] = (0.1, 0.5, 0.9)
    guard_min_rows: int = Field(
        50, ge=1, description="fewer validation rows: serve the model unadjusted"
    )
    guard_lower_quantile: float = Field(
        0.025, gt=0, lt=0.5,
        description="a rule replaces the anchor baseline only if this quantile of its margin "
        "(time-block bootstrap of validation) is above zero",
    )  # fmt: skip
    guard_blocks: int = Field(10, ge=2, description="contiguous time blocks of the bootstrap")
    guard_resamples: int = Field(400, ge=50, description="bootstrap resamples")
