"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import os

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
_NOT_READY = {"ready": False, "checks": {"model": False, "prediction_log": True},
              "model_version": None, "problems": {}}  # fmt: skip


@router.get(
    "/readyz",
    responses={
        **responses(ok=_READY),
        503: {"description": "not ready", "content": {"application/json": {"example": _NOT_READY}}},
    },
)
async def readyz(state: StateDep, response: Response) -> dict[str, object]:
    """Ready when a model (or the gateway) and the prediction log can serve."""
    readiness = state.backend.readiness() if state.backend is not None else None
    checks = readiness.checks if readiness else {"model": False, "prediction_log": False}
    ready = all(checks.values())
    response.status_code = 200 if ready else 503
    return {
        "ready": ready,
        "checks": checks,
        "model_version": readiness.model_version if readiness else None,
        "problems": state.errors,
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
