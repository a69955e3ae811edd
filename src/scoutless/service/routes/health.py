"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from fastapi import APIRouter, Request, Response

from scoutless.service.deps import MetricsDep, StateDep
from scoutless.service.openapi import needs, responses

router = APIRouter(tags=["health"])


@router.get("/healthz", responses=responses(ok={"status": "ok", "pid": 4242}))
async def healthz() -> dict[str, object]:
    """The process answers (liveness); ``pid`` tells the workers of one service apart."""
    return {"status": "ok", "pid": os.getpid()}


_READY = {"ready": True, "checks": {"model": True, "prediction_log": True},
          "model_version": "v3", "problems": {}}  # fmt: skip
_NOT_READY = {"ready": False, "checks": {"model": True, "prediction_log": True, "history": False},
              "model_version": "v3", "problems": {"history": "the database lacks table(s) "
              "jedi_tasks, jedi_taskparams, jedi_datasets: tasks cannot be read by id"}}  # fmt: skip


async def _history_problem(reader: Any) -> str | None:
    """Why tasks cannot be read by id: the tables the served database lacks (a mistyped
    SQLite path, a database that is not a PanDA history); None when they are there or
    the database cannot be reached now (an outage answers 503 on that route alone).
    Looked up once, and again after a failed read (``TaskReader.missing_tables``)."""
    missing = await asyncio.to_thread(reader.missing_tables)
    if not missing:
        return None
    return (f"the database lacks table(s) {', '.join(missing)}: tasks cannot be read by id "
            "(serve --db a PanDA history)")  # fmt: skip


@router.get(
    "/readyz",
    responses={
        **responses(ok=_READY),
        503: {"description": "not ready", "content": {"application/json": {"example": _NOT_READY}}},
    },
)
async def readyz(state: StateDep, response: Response) -> dict[str, object]:
    """Ready when a model (or the gateway), the prediction log and the database's tables
    for reads by id are there; ``problems`` says what is not."""
    readiness = state.backend.readiness() if state.backend is not None else None
    checks = dict(readiness.checks) if readiness else {"model": False, "prediction_log": False}
    problems = dict(state.errors)
    reader = getattr(state.backend, "reader", None)
    if reader is not None:
        history = await _history_problem(reader)
        checks["history"] = history is None
        if history is not None:
            problems["history"] = history
    ready = all(checks.values())
    response.status_code = 200 if ready else 503
    return {
        "ready": ready,
        "checks": checks,
        "model_version": readiness.model_version if readiness else None,
        "problems": problems,
    }


_METRICS = {
    200: {"content": {"text/plain": {"example": "scoutless_requests_total{route=\"/v1/predict\","
                                                "method=\"POST\",status=\"200\"} 42.0\n"}}},
}  # fmt: skip


@router.get("/metrics", openapi_extra=needs("read"), responses={**responses(401, 403), **_METRICS})
async def metrics(state: StateDep, metrics: MetricsDep, request: Request) -> Response:
    """Prometheus exposition of this app's registry (role ``read``, unless
    ``Settings.service.metrics_open``)."""
    if not state.settings.service.metrics_open:
        state.auth.authorize(request, "read")
    return Response(metrics.render(), media_type=metrics.content_type)
