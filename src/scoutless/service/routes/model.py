"""The bundle being served: its manifest and what this instance hosts (role ``read``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from scoutless.service.deps import BackendDep, StateDep
from scoutless.service.openapi import GUARDED, needs, responses

router = APIRouter(prefix="/v1", tags=["model"])

MODEL_EXAMPLE = {
    "mode": "local",
    "model_version": "v3",
    "targets": ["memory", "cputime", "io", "walltime"],
    "features": [{"name": "processingtype", "kind": "categorical"}],
    "manifest": {"version": "v3", "created_at": "2026-11-30T12:00:00Z"},
    "library_warning": None,
    "room_loads": {
        "source": "bundle",
        "loads": {"single": {"himem": 0.49, "long_queue": 0.18},
                  "multi": {"himem": 0.09, "long_queue": 0.15}},
    },
}  # fmt: skip


@router.get("/model", openapi_extra=needs("read"), responses=responses(*GUARDED, ok=MODEL_EXAMPLE))
async def model(state: StateDep, backend: BackendDep, request: Request) -> dict[str, Any]:
    """The bundle manifest, its version, and the targets this instance serves (or, for a
    gateway, its remotes and theirs). No filesystem path is shown."""
    state.auth.authorize(request, "read")
    return await backend.model_info()
