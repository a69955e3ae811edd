"""Hot reload of the served bundle (bearer token from ``ServiceSettings.admin_token``)."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import APIRouter, Body, Header, HTTPException
from starlette.concurrency import run_in_threadpool

from scoutless.service.deps import StateDep
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
    request: Annotated[ReloadRequest | None, Body()] = None,
    authorization: Annotated[str | None, Header()] = None,
) -> ReloadResponse:
    """Load a bundle (or the registry's current champion) and swap it in without downtime."""
    _authorise(state.settings.service.admin_token, authorization)
    if state.holder is None:
        raise HTTPException(409, detail="this instance is a gateway: reload its remotes")
    source = request.bundle if request and request.bundle else None
    try:
        previous, served = await run_in_threadpool(state.holder.load, source)
    except (OSError, LookupError, ValueError) as exc:
        state.metrics.error("reload")
        raise HTTPException(
            422, detail=f"cannot load bundle {source or state.holder.source}: {exc}"
        ) from exc
    return ReloadResponse(
        previous_version=previous.version if previous else None,
        model_version=served.version,
        bundle=str(served.bundle_path),
    )
