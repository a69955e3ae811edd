"""Predictions: posted tasks, or a task read from the PanDA database by id."""

from __future__ import annotations

import uuid
from typing import Annotated

import orjson
from fastapi import APIRouter, HTTPException, Path, Query, Request, Response

from scoutless.service.backend import Answer, TaskQuery
from scoutless.service.deps import backend_of, state_of
from scoutless.service.pipeline import JSON_OPTS
from scoutless.service.schemas import PolicyName, PredictRequest, PredictResponse

router = APIRouter(prefix="/v1", tags=["predict"])


def json_response(answer: Answer) -> Response:
    body = orjson.dumps(answer.body, option=JSON_OPTS)
    return Response(body, answer.status, media_type="application/json")


def _request_id(request: Request) -> str:
    return request.headers.get("x-request-id") or uuid.uuid4().hex


@router.post("/predict", response_model=PredictResponse)
async def predict(body: PredictRequest, request: Request) -> Response:
    """Predict the classes of one or many tasks (features, or PanDA task parameters)."""
    state = state_of(request)
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
    policy: PolicyName = "argmax",
    alpha: Annotated[float | None, Query(gt=0, lt=1)] = None,
    targets: Annotated[str | None, Query(description="comma-separated subset")] = None,
) -> Response:
    """Read the task's submission-time features from the PanDA database, then predict."""
    wanted = [t for t in (targets or "").split(",") if t] or None
    query = TaskQuery(policy=policy, alpha=alpha, targets=wanted)
    backend = backend_of(state_of(request))
    return json_response(await backend.task_prediction(jeditaskid, query, _request_id(request)))
