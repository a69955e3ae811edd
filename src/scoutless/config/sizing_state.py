"""Where the online sizer's state lives and how processes share it (``settings.sizing_state``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SizingStateSettings(BaseModel):
    """The online sizer's state in the database (``scoutless.sizing.persistent``)."""

    model_config = ConfigDict(extra="forbid")

    db_url: str | None = Field(
        None,
        description="SQLAlchemy URL holding the sizer's state; None: the project's database "
        "(Settings.db_url, or the SQLite file in the work dir)",
    )
    refresh_interval_s: float = Field(
        0.0,
        ge=0,
        description="a reader re-checks the types' versions at most this often (0: before every "
        "allocation, one indexed query); a writer always re-checks before it learns",
    )
    keep_outcomes: int = Field(
        10_000,
        ge=0,
        description="outcome log rows kept per type (older ones are pruned each time a type's "
        "version reaches a multiple of it); 0: keep every row",
    )
    max_attempts: int = Field(
        1000,
        ge=1,
        description="compare-and-set attempts of one outcome before learning gives up "
        "(each lost attempt re-reads the types that moved)",
    )
