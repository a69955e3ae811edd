"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Response

from scoutless.service.deps import MetricsDep, StateDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process answers (liveness)."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(state: StateDep, response: Response) -> dict[str, object]:
    """Ready when a model (or the gateway) and the prediction log can serve."""
    served = state.holder.current if state.holder is not None else None
    checks = {
        "model": served is not None or state.gateway is not None,
        "prediction_log": state.writer is not None or state.gateway is not None,
    }
    ready = all(checks.values())
    response.status_code = 200 if ready else 503
    return {
        "ready": ready,
        "checks": checks,
        "model_version": served.version if served else None,
        "problems": state.errors,
    }


@router.get("/metrics")
async def metrics(metrics: MetricsDep) -> Response:
    """Prometheus exposition of this app's registry."""
    return Response(metrics.render(), media_type=metrics.content_type)
