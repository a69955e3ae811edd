"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import os

from fastapi import APIRouter, Response

from scoutless.service.deps import MetricsDep, StateDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, object]:
    """The process answers (liveness); ``pid`` tells the workers of one service apart."""
    return {"status": "ok", "pid": os.getpid()}


@router.get("/readyz")
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


@router.get("/metrics")
async def metrics(metrics: MetricsDep) -> Response:
    """Prometheus exposition of this app's registry."""
    return Response(metrics.render(), media_type=metrics.content_type)
