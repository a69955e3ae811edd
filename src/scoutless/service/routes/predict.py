"""Predictions: posted tasks, or a task read from the PanDA database by id."""

from __future__ import annotations

import uuid
from typing import Annotated

import orjson
from fastapi import APIRouter, HTTPException, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from scoutless.allocation.policies import unused_alpha
from scoutless.config import AllocationSettings
from scoutless.service.backend import Answer, TaskQuery
from scoutless.service.deps import backend_of, state_of
from scoutless.service.pipeline import JSON_OPTS
from scoutless.service.schemas import (
    ColumnsResponse,
    PolicyName,
    PredictRequest,
    PredictResponse,
)

router = APIRouter(prefix="/v1", tags=["predict"])


def json_response(answer: Answer) -> Response:
    body = orjson.dumps(answer.body, option=JSON_OPTS)
    return Response(body, answer.status, media_type="application/json")


def _request_id(request: Request) -> str:
    return request.headers.get("x-request-id") or uuid.uuid4().hex


def parse_predict_request(body: bytes) -> PredictRequest:
    """The request body as a :class:`PredictRequest`, parsed and validated in one pass.

    pydantic's own JSON parser builds the model straight from the bytes: a 1,000-task batch
    takes 6 ms, against 15 ms through ``json.loads`` and validation of the Python objects
    (FastAPI's way). Errors become FastAPI's 422 body, locations prefixed with "body".
    """
    try:
        return PredictRequest.model_validate_json(body)
    except ValidationError as exc:
        errors = [
            {**e, "loc": ("body", *e["loc"]) if e["type"] != "json_invalid" else ("body",)}
            for e in exc.errors(include_url=False)
        ]
        raise RequestValidationError(errors) from None


def resolved_policy(
    policy: str | None, alpha: float | None, settings: AllocationSettings, where: str
) -> str:
    """The policy asked for, else the configured default; 422 naming ``alpha`` when the
    policy does not read it (one shape with every other validation error)."""
    chosen = policy or settings.default_policy
    problem = unused_alpha(chosen, alpha)
    if problem:
        error = {"type": "value_error", "loc": (where, "alpha"), "msg": problem, "input": alpha}
        raise RequestValidationError([error])
    return chosen


_BODY_DOC = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": PredictRequest.model_json_schema()}},
    }
}


@router.post("/predict", response_model=PredictResponse | ColumnsResponse, openapi_extra=_BODY_DOC)
async def predict(request: Request) -> Response:
    """Predict the classes of one or many tasks (features, or PanDA task parameters)."""
    body = parse_predict_request(await request.body())
    state = state_of(request)
    policy = resolved_policy(body.policy, body.alpha, state.settings.allocation, "body")
    body = body.model_copy(update={"policy": policy})
    backend, settings = backend_of(state), state.settings.service
    n_tasks = len(body.rows())
    if n_tasks > settings.max_batch:
        state.metrics.error("batch_too_large")
        raise HTTPException(
            413, detail=f"{n_tasks} tasks in one request; the limit is {settings.max_batch}"
        )
    return json_response(await backend.predict(body, _request_id(request)))


@router.get("/tasks/{jeditaskid}/prediction", response_model=PredictResponse)
async def task_prediction(
    jeditaskid: Annotated[int, Path(ge=0)],
    request: Request,
    policy: Annotated[
        PolicyName | None, Query(description="default: allocation.default_policy ('cost')")
    ] = None,
    alpha: Annotated[float | None, Query(gt=0, lt=1, description="risk and value only")] = None,
    targets: Annotated[str | None, Query(description="comma-separated subset")] = None,
) -> Response:
    """Read the task's submission-time features from the PanDA database, then predict."""
    wanted = [t for t in (targets or "").split(",") if t] or None
    state = state_of(request)
    chosen = resolved_policy(policy, alpha, state.settings.allocation, "query")
    query = TaskQuery(policy=chosen, alpha=alpha, targets=wanted)
    backend = backend_of(state)
    return json_response(await backend.task_prediction(jeditaskid, query, _request_id(request)))
