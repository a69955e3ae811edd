"""The bundle being served: its manifest and what this instance hosts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from scoutless.service.deps import BackendDep

router = APIRouter(prefix="/v1", tags=["model"])


@router.get("/model")
async def model(backend: BackendDep) -> dict[str, Any]:
    """The bundle manifest, its version, and the targets this instance serves (or, for a
    gateway, its remotes and theirs)."""
    return await backend.model_info()
