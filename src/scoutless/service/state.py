"""Everything one app instance holds between requests (built in ``app.lifespan``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from scoutless.config import Settings
from scoutless.service.auth import Authenticator
from scoutless.service.backend import Backend
from scoutless.service.telemetry import Metrics


@dataclass
class ServiceState:
    settings: Settings
    metrics: Metrics
    auth: Authenticator
    backend: Backend | None = None  # LocalBackend or Gateway, set once started
    executor: ThreadPoolExecutor | None = None
    errors: dict[str, str] = field(default_factory=dict)  # component -> why it is not ready
