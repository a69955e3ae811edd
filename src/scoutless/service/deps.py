"""Typed dependencies: routes declare what they need in one word (``BackendDep``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from scoutless.config import ServiceSettings
from scoutless.service.backend import Backend
from scoutless.service.state import ServiceState
from scoutless.service.telemetry import Metrics


def get_state(request: Request) -> ServiceState:
    return request.app.state.service  # type: ignore[no-any-return]


StateDep = Annotated[ServiceState, Depends(get_state)]


def get_backend(state: StateDep) -> Backend:
    """What answers predictions here (local bundle or gateway); 503 until started."""
    if state.backend is None:
        raise HTTPException(503, detail={"kind": "not_ready", "msg": "service is starting"})
    return state.backend


def get_metrics(state: StateDep) -> Metrics:
    return state.metrics


def get_service_settings(state: StateDep) -> ServiceSettings:
    return state.settings.service


BackendDep = Annotated[Backend, Depends(get_backend)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
ServiceSettingsDep = Annotated[ServiceSettings, Depends(get_service_settings)]
