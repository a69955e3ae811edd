"""Request and response bodies of the HTTP API.

Feature *values* are checked by the served bundle (``Predictor.validate_frame``) and the
numeric submission fields against their domains (``features.domains``), not by a model
frozen at import time: a hot-reloaded bundle with another feature schema is then
validated against its own schema, and a missing or wrong-typed feature still answers 422
naming the field. The response models document the API; the routes serialise plain dicts
with orjson for speed, in exactly these shapes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from scoutless.policy_names import PolicyName


class PredictRequest(BaseModel):
    """One or many tasks: feature dicts as in training, or PanDA task-parameter JSONs."""

    model_config = ConfigDict(extra="forbid")

    tasks: list[dict[str, Any]] | None = Field(
        None, description="submission-time features per task (optional key 'jeditaskid')"
    )
    task: dict[str, Any] | None = Field(None, description="a single task's features")
    taskparams: list[dict[str, Any] | str] | None = Field(
        None, description="PanDA task-parameter JSON per task, as submitted"
    )
    policy: PolicyName | None = Field(
        None, description="default: the server's allocation.default_policy ('cost')"
    )
    alpha: float | None = Field(
        None, gt=0, lt=1, description="under-allocation bound (policies 'risk' and 'value' only)"
    )
    targets: list[str] | None = Field(None, description="subset of the served targets")
    layout: Literal["tasks", "columns"] = Field(
        "tasks",
        description="'tasks': one object per task (PredictResponse); 'columns': per target, "
        "one array per field over the tasks (ColumnsResponse), for batch clients",
    )

    @model_validator(mode="after")
    def _exactly_one_input(self) -> PredictRequest:
        given = [n for n in ("tasks", "task", "taskparams") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(
                f"give exactly one of 'tasks', 'task' or 'taskparams' (got {given or 'none'})"
            )
        return self

    def rows(self) -> list[dict[str, Any]] | list[dict[str, Any] | str]:
        if self.task is not None:
            return [self.task]
        return self.tasks if self.tasks is not None else self.taskparams  # type: ignore[return-value]

    @property
    def is_taskparams(self) -> bool:
        return self.taskparams is not None


class TargetPrediction(BaseModel):
    class_id: int
    class_label: str
    bin_range: tuple[float | None, float | None] = Field(
        description="(lower, upper] of the class in the target's unit; null = unbounded"
    )
    probabilities: list[float] = Field(description="one per class, in class order")
    recommended_value: float = Field(
        description="value to allocate, in PanDA's unit: the chosen class's recommended value "
        "(class policies) or the task's own value (value, cost)"
    )
    unit: str
    panda_field: str
    confidence: float = Field(description="probability of the chosen class")
    p_sufficient: float = Field(
        description="P(need <= recommended value), calibrated (value, cost); P(true class <= "
        "chosen) for the class policies"
    )
    policy: PolicyName
    alpha: float | None = Field(
        None,
        description="the under-allocation bound the value was chosen at: risk and value; "
        "cost's unpriced targets (io, walltime); null otherwise",
    )


class ScoutDecision(BaseModel):
    """``policy=cost``: whether scouting the task is cheaper than predicting, and why."""

    scout: bool
    reason: str
    predict_cost: float = Field(description="the task's jobs at the cost-aware values, core-hours")
    scout_cost: float = Field(description="the scouts' wait and the jobs at the measured need")


class TargetError(BaseModel):
    kind: str = Field(description="timeout, unavailable, http_error, not_served …")
    message: str
    remote: str | None = None


class TaskPrediction(BaseModel):
    index: int
    jeditaskid: int | None
    targets: dict[str, TargetPrediction]
    flags: list[dict[str, Any]] = Field(
        default_factory=list,
        description="e.g. {'kind': 'unknown_category', 'feature': …}, {'kind': "
        "'outside_training', 'features': {name: value}} (numbers beyond the training range)",
    )
    scout: ScoutDecision | None = Field(None, description="policy 'cost' only")


class PredictResponse(BaseModel):
    request_id: str
    model_version: str
    model_versions: dict[str, str] = Field(description="bundle version per target")
    policy: PolicyName
    tasks: list[TaskPrediction]
    errors: dict[str, TargetError] = Field(
        default_factory=dict, description="targets that could not be answered (gateway)"
    )
    timings_ms: dict[str, float]


class TargetColumns(BaseModel):
    """One target's predictions for every task of a batch: the classes described once, then
    one value per task (in task order) of each field of :class:`TargetPrediction`."""

    class_labels: list[str]
    bin_ranges: list[tuple[float | None, float | None]]
    recommended_values: list[float] = Field(description="per class, in PanDA's unit")
    unit: str
    panda_field: str
    policy: PolicyName
    class_id: list[int]
    recommended_value: list[float]
    confidence: list[float]
    p_sufficient: list[float]
    probabilities: list[list[float]] = Field(description="per task, one per class")
    alpha: float | None = None


class ColumnsResponse(BaseModel):
    """``layout="columns"``: what :class:`PredictResponse` holds, without an object per task
    and target; about a third of the bytes, and quicker to build and to parse."""

    request_id: str
    model_version: str
    model_versions: dict[str, str]
    policy: PolicyName
    layout: Literal["columns"]
    jeditaskids: list[int | None]
    flags: list[list[dict[str, Any]]] = Field(description="per task, as in TaskPrediction")
    targets: dict[str, TargetColumns]
    scout: list[ScoutDecision] | None = Field(None, description="per task, policy 'cost' only")
    errors: dict[str, TargetError] = Field(default_factory=dict)
    timings_ms: dict[str, float]


class ReloadRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bundle: str | None = Field(
        None,
        max_length=4096,
        description="a bundle folder under Settings.service.reload_roots; default: what the "
        "service follows (its registry's champion or bundle folder), re-read",
    )


class ReloadResponse(BaseModel):
    previous_version: str | None
    model_version: str
    bundle: str
