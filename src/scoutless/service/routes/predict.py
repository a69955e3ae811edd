"""Predictions: posted tasks, or a task read from the PanDA database by id."""

from __future__ import annotations

import itertools
import os
import re
from typing import Annotated

import orjson
from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from scoutless.allocation.policies import unused_alpha
from scoutless.config import AllocationSettings
from scoutless.service.backend import Answer, TaskQuery
from scoutless.service.deps import backend_of, state_of
from scoutless.service.errors import ServiceError, clean_validation_errors
from scoutless.service.openapi import (
    GUARDED,
    PREDICTION_EXAMPLE,
    REQUEST_EXAMPLES,
    needs,
    responses,
)
from scoutless.service.pipeline import JSON_OPTS
from scoutless.service.request_input import INT64_MAX
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


#: what a caller's ``X-Request-Id`` may hold (it is logged and stored: String(64))
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


#: fresh request ids: 32 hex digits like ``uuid4().hex``, a random half per process and a
#: counter (uuid4 asks the kernel for randomness each time: a syscall that lets the
#: prediction log's thread take the GIL in the middle of a request)
_ID_PREFIX, _ID_COUNTER = os.urandom(8).hex(), itertools.count()


def _new_id_prefix() -> None:  # a forked worker draws its own half
    global _ID_PREFIX
    _ID_PREFIX = os.urandom(8).hex()


os.register_at_fork(after_in_child=_new_id_prefix)


def request_id(request: Request) -> str:
    """The caller's ``X-Request-Id`` (checked: 1-64 of ``A-Za-z0-9._:-``) or a fresh one."""
    given = request.headers.get("x-request-id")
    if given is None:
        return f"{_ID_PREFIX}{next(_ID_COUNTER):016x}"
    if REQUEST_ID.fullmatch(given) is None:
        raise ServiceError(
            422, "invalid_request_id", "expected 1-64 characters of A-Z a-z 0-9 . _ : -",
            ["header", "x-request-id"],
        )  # fmt: skip
    return given


def parse_predict_request(body: bytes) -> PredictRequest:
    """The request body as a :class:`PredictRequest`, parsed and validated in one pass.

    pydantic's own JSON parser builds the model straight from the bytes, without the Python
    objects that ``json.loads`` and their validation (FastAPI's way) would make first. Errors become FastAPI's 422 body, locations prefixed with "body".
    """
    try:
        return PredictRequest.model_validate_json(body)
    except ValidationError as exc:
        errors = [
            {**e, "loc": ("body", *e["loc"]) if e["type"] != "json_invalid" else ("body",)}
            for e in exc.errors(include_url=False, include_input=False)
        ]
        raise RequestValidationError(clean_validation_errors(errors)) from None


def resolved_policy(
    policy: str | None, alpha: float | None, settings: AllocationSettings, where: str
) -> str:
    """The policy asked for, else the configured default; 422 naming ``alpha`` when the
    policy does not read it (one shape with every other validation error)."""
    chosen = policy or settings.default_policy
    problem = unused_alpha(chosen, alpha)
    if problem:
        error = {"type": "value_error", "loc": (where, "alpha"), "msg": problem}
        raise RequestValidationError(clean_validation_errors([error]))
    return chosen


_BODY_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": PredictRequest.model_json_schema(),
                "examples": REQUEST_EXAMPLES,
            }
        },
    },
    **needs("predict"),
}


@router.post(
    "/predict",
    response_model=PredictResponse | ColumnsResponse,
    openapi_extra=_BODY_DOC,
    responses=responses(408, 413, 415, 422, *GUARDED, ok=PREDICTION_EXAMPLE),
)
async def predict(request: Request) -> Response:
    """Predict the classes of one or many tasks (features, or PanDA task parameters).
    Needs the ``predict`` role: every answer is written to the prediction log."""
    state = state_of(request)
    caller = state.auth.authorize(request, "predict").name
    rid = request_id(request)
    body = parse_predict_request(await request.body())
    policy = resolved_policy(body.policy, body.alpha, state.settings.allocation, "body")
    body.policy = policy  # type: ignore[assignment]  # the request's own body: no copy
    backend, settings = backend_of(state), state.settings.service
    n_tasks = len(body.rows())
    if n_tasks > settings.max_batch:
        raise ServiceError(
            413, "batch_too_large",
            f"{n_tasks} tasks in one request; the limit is {settings.max_batch}",
        )  # fmt: skip
    return json_response(await backend.predict(body, rid, caller))


@router.get(
    "/tasks/{jeditaskid}/prediction",
    response_model=PredictResponse,
    openapi_extra=needs("predict"),
    responses=responses(404, 422, *GUARDED, ok=PREDICTION_EXAMPLE),
)
async def task_prediction(
    jeditaskid: Annotated[int, Path(ge=0, le=INT64_MAX)],
    request: Request,
    policy: Annotated[
        PolicyName | None, Query(description="default: allocation.default_policy ('cost')")
    ] = None,
    alpha: Annotated[float | None, Query(gt=0, lt=1, description="risk and value only")] = None,
    targets: Annotated[
        str | None, Query(max_length=256, description="comma-separated subset")
    ] = None,
) -> Response:
    """Read the task's submission-time features from the PanDA database, then predict.
    Needs the ``predict`` role (the answer is written to the prediction log)."""
    state = state_of(request)
    caller = state.auth.authorize(request, "predict").name
    rid = request_id(request)
    wanted = [t for t in (targets or "").split(",") if t] or None
    chosen = resolved_policy(policy, alpha, state.settings.allocation, "query")
    query = TaskQuery(policy=chosen, alpha=alpha, targets=wanted)
    answer = await backend_of(state).task_prediction(jeditaskid, query, rid, caller)
    return json_response(answer)
