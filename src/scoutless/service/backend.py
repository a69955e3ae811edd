"""What answers the routes: one shape for both deployment modes.

An instance either predicts itself (:class:`scoutless.service.local.LocalBackend`: the
served bundle, the PanDA database, the prediction log) or fans requests out to
per-target services (:class:`scoutless.service.gateway.Gateway`). Both implement
:class:`Backend`, so routes never ask which mode they run in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from scoutless.service.schemas import PredictRequest, ReloadResponse


class ReloadFailed(ValueError):
    """The bundle to swap in cannot be loaded (the served one stays)."""


@dataclass(frozen=True)
class Answer:
    """A response body and its HTTP status."""

    body: dict[str, Any]
    status: int = 200


@dataclass(frozen=True)
class TaskQuery:
    """Options of ``GET /v1/tasks/{id}/prediction``."""

    policy: str = "argmax"
    alpha: float | None = None
    targets: list[str] | None = None


@dataclass(frozen=True)
class Readiness:
    checks: dict[str, bool]
    model_version: str | None


class Backend(Protocol):
    async def predict(
        self, body: PredictRequest, request_id: str, caller: str | None = None
    ) -> Answer:
        """Predict posted tasks; ``caller``: who asked (kept in the prediction log)."""
        ...

    async def task_prediction(
        self, jeditaskid: int, query: TaskQuery, request_id: str, caller: str | None = None
    ) -> Answer:
        """Predict a task read from the PanDA database by id."""
        ...

    async def model_info(self) -> dict[str, Any]: ...

    async def reload(self, source: str | None) -> ReloadResponse:
        """Swap in a new bundle (``source``: default the configured one, re-resolved)."""
        ...

    def readiness(self) -> Readiness: ...

    async def close(self) -> None: ...
