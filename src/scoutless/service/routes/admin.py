"""Hot reload of the served bundle (role ``admin``); every reload is logged with its caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Request

from scoutless.service.backend import ReloadFailed
from scoutless.service.deps import BackendDep, StateDep
from scoutless.service.errors import ServiceError, log
from scoutless.service.openapi import GUARDED, needs, responses
from scoutless.service.schemas import ReloadRequest, ReloadResponse

router = APIRouter(prefix="/v1/admin", tags=["admin"])

_RELOADED = {"previous_version": "v2", "model_version": "v3", "bundle": "/srv/registry/versions/v3"}


@router.post(
    "/reload",
    response_model=ReloadResponse,
    openapi_extra=needs("admin"),
    responses=responses(409, 415, 422, *GUARDED, ok=_RELOADED),
)
async def reload(
    state: StateDep,
    backend: BackendDep,
    http: Request,
    request: Annotated[ReloadRequest | None, Body()] = None,
) -> ReloadResponse:
    """Reload what the service follows (its registry's champion, its bundle folder), or
    load a bundle under ``Settings.service.reload_roots``, without downtime; every worker
    follows within its poll interval."""
    principal = state.auth.authorize(http, "admin")
    source = request.bundle if request and request.bundle else None
    log.warning("reload asked by %s: %s", principal.name, source or "(what is followed)")
    try:
        answer = await backend.reload(source)
    except ReloadFailed as exc:
        raise ServiceError(422, "reload_failed", str(exc)) from exc
    log.warning("reload by %s: %s -> %s", principal.name, answer.previous_version,
                answer.model_version)  # fmt: skip
    return answer
