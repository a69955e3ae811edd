"""Typed dependencies: routes declare what they need in one word (``ServedDep``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from scoutless.config import ServiceSettings
from scoutless.service.serving import Served
from scoutless.service.state import ServiceState
from scoutless.service.telemetry import Metrics


def get_state(request: Request) -> ServiceState:
    return request.app.state.service  # type: ignore[no-any-return]


StateDep = Annotated[ServiceState, Depends(get_state)]


def get_served(state: StateDep) -> Served:
    """The model being served now; 503 while none is loaded."""
    served = state.holder.current if state.holder is not None else None
    if served is None:
        raise HTTPException(503, detail={"kind": "not_ready", "msg": "no model loaded"})
    return served


def get_metrics(state: StateDep) -> Metrics:
    return state.metrics


def get_service_settings(state: StateDep) -> ServiceSettings:
    return state.settings.service


ServedDep = Annotated[Served, Depends(get_served)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
ServiceSettingsDep = Annotated[ServiceSettings, Depends(get_service_settings)]
