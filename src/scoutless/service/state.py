"""Everything one app instance holds between requests (built in ``app.lifespan``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from sqlalchemy import Engine

from scoutless.config import Settings
from scoutless.ops.prediction_log import GroupCommitWriter, PredictionLog
from scoutless.service.gateway import Gateway
from scoutless.service.serving import ModelHolder
from scoutless.service.telemetry import Metrics


@dataclass
class ServiceState:
    settings: Settings
    metrics: Metrics
    holder: ModelHolder | None = None
    history_engine: Engine | None = None
    log: PredictionLog | None = None
    writer: GroupCommitWriter | None = None
    gateway: Gateway | None = None
    executor: ThreadPoolExecutor | None = None
    errors: dict[str, str] = field(default_factory=dict)  # component -> why it is not ready
