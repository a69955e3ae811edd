"""The bundle being served: its manifest and what this instance hosts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from scoutless.service.deps import StateDep, get_served

router = APIRouter(prefix="/v1", tags=["model"])


@router.get("/model")
async def model(state: StateDep) -> dict[str, Any]:
    """The bundle manifest, its version, and the targets this instance serves."""
    if state.gateway is not None:
        return await state.gateway.models()
    served = get_served(state)
    return {
        "mode": "local",
        "model_version": served.version,
        "bundle": str(served.bundle_path) if served.bundle_path else None,
        "targets": served.pipeline.targets,
        "features": [s.to_dict() for s in served.predictor.feature_specs],
        "manifest": served.predictor.manifest,
    }
