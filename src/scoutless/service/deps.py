"""Typed dependencies: routes declare what they need in one word (``BackendDep``).

They are ``async def`` on purpose: FastAPI runs a plain ``def`` dependency on the thread
pool, and a thread hop per dependency costs more CPU than the prediction itself. The two
prediction routes (the hot path) call :func:`state_of` / :func:`backend_of` directly:
solving even async dependencies costs a noticeable share of a small request's CPU.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from scoutless.config import ServiceSettings
from scoutless.service.backend import Backend
from scoutless.service.state import ServiceState
from scoutless.service.telemetry import Metrics


def state_of(request: Request) -> ServiceState:
    return request.app.state.service  # type: ignore[no-any-return]


def backend_of(state: ServiceState) -> Backend:
    """What answers predictions here (local bundle or gateway); 503 until started."""
    if state.backend is None:
        raise HTTPException(503, detail={"kind": "not_ready", "msg": "service is starting"})
    return state.backend


async def get_state(request: Request) -> ServiceState:
    return state_of(request)


StateDep = Annotated[ServiceState, Depends(get_state)]


async def get_backend(state: StateDep) -> Backend:
    return backend_of(state)


async def get_metrics(state: StateDep) -> Metrics:
    return state.metrics


async def get_service_settings(state: StateDep) -> ServiceSettings:
    return state.settings.service


BackendDep = Annotated[Backend, Depends(get_backend)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
ServiceSettingsDep = Annotated[ServiceSettings, Depends(get_service_settings)]
