"""Online per-instance sizing (``settings.sizing``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SizingSettings(BaseModel):
    """Online per-instance sizing (``scoutless.sizing``, ``scoutless size``)."""

    model_config = ConfigDict(extra="forbid")

    grid_points: int = Field(
        48,
        ge=8,
        le=512,
        description="quantile points of an instance's need an allocation is priced on",
    )
    tail_levels: int = Field(
        5,
        ge=0,
        le=16,
        description="candidates added in the grid's top step, at levels 1 − 2⁻ᵏ/(grid_points − 1) "
        "(k = 1 … this): the tail, where a failure's price moves the answer, at finer steps",
    )
    neighbourhood_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="an instance's residuals are weighted by a tricube kernel over this share "
        "of its type's rows nearest its input size (a need's spread differs along it; no "
        "input size known: every row alike); 0: every row alike",
    )
    prior_weight: float = Field(
        4.0,
        ge=0,
        description="pseudo-instances of the other task types' residual shape a type "
        "starts with (fades as its own instances come)",
    )
    kernel_nodes: int = Field(
        5, ge=1, le=15, description="nodes of the Gaussian kernel that smooths the residuals"
    )
    runtime_weighted: bool = Field(
        True, description="weight residuals by their instance's runtime (long instances cost more)"
    )
    failure_penalty: float = Field(
        0.25,
        ge=0,
        description="extra cost of a failed attempt (a restart's overhead), in units "
        "of max(the median need, penalty_floor_bytes) × runtime; 0: the protocol's prices only",
    )
    penalty_floor_bytes: float = Field(
        2e9, ge=0, description="the least memory a failure's overhead is priced at (a slot)"
    )
    prior_refresh_share: float = Field(
        0.01,
        ge=0,
        description="the other types' pooled residual shape (a type's prior) is rebuilt once "
        "their outcomes have grown by more than this share since (0: after every outcome; "
        "a walk of one type after another never sees it stale)",
    )
    sample_refresh_share: float = Field(
        0.02,
        ge=0,
        description="a type's residual samples are rebuilt (a sort of its rows) once it has "
        "learnt more than this share of the rows they were built from (0: after every "
        "outcome; a large type then costs a sort per outcome)",
    )
    residuals: Literal["leave_one_out", "prequential"] = Field(
        "leave_one_out",
        description="the residuals a type's need is spread by: each model's leave-one-out "
        "residuals of the rows held, refitted whenever the samples are rebuilt (the error of "
        "the model that sizes next), or each row's residual against the model as it stood "
        "before that row was learnt (what a type that starts small keeps of its first, "
        "poorly fitted outcomes, as wide as the model was then)",
    )
    refit_every: int = Field(
        16, ge=1, description="instances between refits of a type's model choice"
    )
    min_rows_linear: int = Field(
        8, ge=3, description="fewer rows: a type's need is not regressed on its input size"
    )
    shadow_choice: bool = Field(
        True, description="re-choose a type's model by what each candidate's plan would have cost"
    )
    shadow_runtime: bool = Field(
        True,
        description="charge a candidate's shadow cost × the instance's runtime (what the protocol charges)",
    )
    own_replaces_borrowed: int = Field(
        5,
        ge=1,
        description="outcomes of its own after which a type sized cold forgets the "
        "instances borrowed from other workflows",
    )
    refute_borrowed: bool = Field(
        True,
        description="a type sized cold forgets the borrowed instances at once when one of its "
        "own needs, or a kill's bound, lies outside every borrowed need",
    )
    max_outcomes_per_type: int | None = Field(
        2048,
        ge=16,
        description="outcomes a task type's state holds at most, the oldest dropped first "
        "when its samples are rebuilt (between two rebuilds up to sample_refresh_share × "
        "this more; None: every outcome, state and time per outcome then grow with the type)",
    )
    fallback_growth: float = Field(
        2.0, gt=1, description="a retry past every need the model knows multiplies by this"
    )
    walltime_retry_growth: float = Field(
        2.0,
        ge=1,
        description="a walltime retry is at least the killed limit × this: a kill costs the "
        "cores' whole run (1/slack price of an excess), and the distribution above a limit "
        "the engine just saw fail is what it knows least (1: the engine's retry alone)",
    )
    fields: list[str] = Field(
        default_factory=lambda: [
            "process",
            "cpus",
            "rchar",
            "rss",
            "peak_rss",
            "memory",
            "realtime",
            "status",
            "exit",
            "attempt",
        ],
        description="Nextflow trace columns the importer takes (process, realtime and a "
        "memory measure are required; the others are taken when present)",
    )
    oom_exits: list[int] = Field(
        default_factory=lambda: [137], description="exit codes of a kill that may be the OOM killer"
    )
    oom_near_share: float = Field(
        0.9,
        gt=0,
        le=1,
        description="a kill with peak_rss at least this share of the request censors memory",
    )
    scheduler_oom_exits: list[int] = Field(
        default_factory=list, description="exit codes a scheduler gives an out-of-memory kill"
    )
    walltime_exits: list[int] = Field(
        default_factory=lambda: [140], description="exit codes of a run-time limit"
    )
