"""Predictions: posted tasks, or a task read from the PanDA database by id."""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, HTTPException, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from scoutless.history.panda_db import DatabaseUnavailable, fetch_task_features
from scoutless.service.deps import ServiceSettingsDep, StateDep, get_served
from scoutless.service.pipeline import JSON_OPTS, Outcome
from scoutless.service.schemas import PolicyName, PredictRequest, PredictResponse
from scoutless.service.serving import Served
from scoutless.service.state import ServiceState

router = APIRouter(prefix="/v1", tags=["predict"])
#: requests with at most this many tasks are computed on the event loop (no thread hop)
INLINE_MAX_TASKS = 4


def json_response(body: dict[str, Any], status: int = 200) -> Response:
    return Response(orjson.dumps(body, option=JSON_OPTS), status, media_type="application/json")


def _gateway_response(result: dict[str, Any]) -> Response:
    return json_response(result, 200 if result["tasks"] else 503)


async def _store_and_answer(
    state: ServiceState, served: Served, outcome: Outcome, request_id: str, policy: str
) -> Response:
    """Commit the prediction-log rows, then answer (a prediction answered is one stored)."""
    start = time.perf_counter()
    if state.writer is not None and outcome.log_rows:
        await asyncio.wrap_future(state.writer.submit(outcome.log_rows))
    outcome.timings_ms["log"] = (time.perf_counter() - start) * 1e3
    state.metrics.observe_stages(outcome.timings_ms)
    for target, counts in outcome.class_counts.items():
        state.metrics.count_predictions(target, counts)
    version = served.version
    targets = list(outcome.class_counts) or served.pipeline.targets
    return json_response(
        {
            "request_id": request_id,
            "model_version": version,
            "model_versions": dict.fromkeys(targets, version),
            "policy": policy,
            "tasks": outcome.tasks,
            "errors": {},
            "timings_ms": outcome.timings_ms,
        }
    )


def _request_id(request: Request) -> str:
    return request.headers.get("x-request-id") or uuid.uuid4().hex


@router.post("/predict", response_model=PredictResponse)
async def predict(
    body: PredictRequest, request: Request, state: StateDep, settings: ServiceSettingsDep
) -> Response:
    """Predict the classes of one or many tasks (features, or PanDA task parameters)."""
    rows = body.rows()
    if len(rows) > settings.max_batch:
        state.metrics.error("batch_too_large")
        raise HTTPException(
            413, detail=f"{len(rows)} tasks in one request; the limit is {settings.max_batch}"
        )
    if state.gateway is not None:
        payload = body.model_dump(exclude_none=True)
        return _gateway_response(await state.gateway.predict(payload, body.targets))
    served = get_served(state)
    request_id = _request_id(request)
    run = functools.partial(
        served.pipeline.run,
        rows,
        taskparams=body.is_taskparams,
        targets=body.targets,
        policy=body.policy,
        alpha=body.alpha or settings.default_alpha,
        request_id=request_id,
    )
    # a few tasks take about a millisecond: cheaper on the event loop than a thread hop
    outcome = run() if len(rows) <= INLINE_MAX_TASKS else await run_in_threadpool(run)
    return await _store_and_answer(state, served, outcome, request_id, body.policy)


@router.get("/tasks/{jeditaskid}/prediction", response_model=PredictResponse)
async def task_prediction(
    jeditaskid: Annotated[int, Path(ge=0)],
    request: Request,
    state: StateDep,
    settings: ServiceSettingsDep,
    policy: PolicyName = "argmax",
    alpha: Annotated[float | None, Query(gt=0, lt=1)] = None,
    targets: Annotated[str | None, Query(description="comma-separated subset")] = None,
) -> Response:
    """Read the task's submission-time features from the PanDA database, then predict."""
    wanted = [t for t in (targets or "").split(",") if t] or None
    if state.gateway is not None:
        params: dict[str, Any] = {"policy": policy} | ({"alpha": alpha} if alpha else {})
        result = await state.gateway.task_prediction(jeditaskid, params, wanted)
        return _gateway_response(result)
    served = get_served(state)
    served.pipeline.check_targets(wanted)
    if state.history_engine is None:
        raise DatabaseUnavailable("no PanDA database configured (--db)")
    start = time.perf_counter()
    frame = await run_in_threadpool(fetch_task_features, state.history_engine, jeditaskid)
    fetch_ms = (time.perf_counter() - start) * 1e3
    rows = [dict(r, jeditaskid=jeditaskid) for r in frame.to_dict("records")]
    request_id = _request_id(request)
    outcome = await run_in_threadpool(
        served.pipeline.run,
        rows,
        targets=wanted,
        policy=policy,
        alpha=alpha or settings.default_alpha,
        request_id=request_id,
    )
    outcome.timings_ms = {"fetch": fetch_ms, **outcome.timings_ms}
    return await _store_and_answer(state, served, outcome, request_id, policy)
