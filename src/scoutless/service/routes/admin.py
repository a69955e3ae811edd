"""Hot reload of the served bundle (bearer token from ``ServiceSettings.admin_token``)."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import APIRouter, Body, Header, HTTPException

from scoutless.service.backend import ReloadFailed
from scoutless.service.deps import BackendDep, StateDep
from scoutless.service.schemas import ReloadRequest, ReloadResponse

router = APIRouter(prefix="/v1/admin", tags=["admin"])


def _authorise(token: str | None, authorization: str | None) -> None:
    if not token:
        raise HTTPException(403, detail="admin endpoints are disabled (no admin_token set)")
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode(), token.encode()):
        raise HTTPException(401, detail="expected header 'Authorization: Bearer <admin token>'")


@router.post("/reload", response_model=ReloadResponse)
async def reload(
    state: StateDep,
    backend: BackendDep,
    request: Annotated[ReloadRequest | None, Body()] = None,
    authorization: Annotated[str | None, Header()] = None,
) -> ReloadResponse:
    """Load a bundle (or the registry's current champion) and swap it in without downtime."""
    _authorise(state.settings.service.admin_token, authorization)
    source = request.bundle if request and request.bundle else None
    try:
        return await backend.reload(source)
    except ReloadFailed as exc:
        state.metrics.error("reload")
        raise HTTPException(422, detail=str(exc)) from exc
