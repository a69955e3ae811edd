"""The monitor loop: collect actuals → check alert rules → retrain on alert, every interval.

One :func:`monitor_step` does a full pass and is what cron or a systemd timer would run
once (``scoutless monitor run --once``); :func:`run_loop` repeats it. SIGINT and SIGTERM
only set a flag: the step in progress finishes (a retrain is never cut in half) and the
loop returns 0.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from scoutless.config import Settings
from scoutless.ops.actuals import CollectResult, collect_actuals, read_actuals
from scoutless.ops.alerts import Alert, AlertConfig, evaluate_rules, fire
from scoutless.ops.guard_rail import ImpactWatch, Verdict
from scoutless.ops.monitoring import MonitorGauges, MonitorSnapshot, build_snapshot
from scoutless.ops.prediction_log import PredictionLog
from scoutless.ops.registry import resolve_champion
from scoutless.ops.retrain import Loader, RetrainResult, retrain

logger = logging.getLogger("scoutless.monitor")


@dataclass
class RetrainOptions:
    """How the loop retrains: on the last ``history_days`` of tasks, promote by ``margin``."""

    history_days: float | None = 30.0
    margin: float = 0.01
    models: tuple[str, ...] = ("xgb",)
    max_epochs: int | None = None
    min_tasks: int = 20


@dataclass
class MonitorContext:
    """Everything a monitor step touches; the ops tables live in ``log_engine``."""

    engine: Engine
    registry: Path
    settings: Settings
    config: AlertConfig = field(default_factory=AlertConfig)
    log_engine: Engine | None = None
    retrain: RetrainOptions | None = field(default_factory=RetrainOptions)
    lookback: timedelta | None = timedelta(days=30)
    gauges: MonitorGauges | None = None
    loader: Loader | None = None
    trainer: Callable[..., Path] | None = None
    #: set: each step also collects the rollout's impact and applies the guard rail
    impact: ImpactWatch | None = None

    @property
    def ops_engine(self) -> Engine:
        return self.log_engine or self.engine


@dataclass
class StepReport:
    collected: CollectResult
    snapshot: MonitorSnapshot
    alerts: list[Alert]
    champion: str
    retrained: RetrainResult | None = None
    guard: Verdict | None = None


def _load(ctx: MonitorContext, path: Path) -> Any:
    if ctx.loader is not None:
        return ctx.loader(path)
    from scoutless.bundle import load_bundle

    return load_bundle(path)


def champion_snapshot(ctx: MonitorContext, predictor: Any) -> MonitorSnapshot:
    """The champion's own predictions in the lookback period, against actuals and training."""
    since = datetime.now(UTC) - ctx.lookback if ctx.lookback else None
    predictions = PredictionLog(ctx.ops_engine).read(since=since)
    return build_snapshot(
        predictions,
        read_actuals(ctx.ops_engine),
        predictor.bins,
        reference=predictor.reference(),
        specs=list(predictor.feature_specs),
        every=ctx.config.every,
        model_version=str(predictor.version),
    )


def monitor_step(ctx: MonitorContext) -> StepReport:
    settings = ctx.settings
    champion_path = resolve_champion(ctx.registry)
    predictor = _load(ctx, champion_path)
    collected = collect_actuals(
        ctx.engine, predictor.bins, settings=settings, log_engine=ctx.ops_engine
    )
    snapshot = champion_snapshot(ctx, predictor)
    new = fire(ctx.ops_engine, evaluate_rules(snapshot.long(), ctx.config.rules), ctx.config)
    if ctx.gauges is not None:
        ctx.gauges.update(snapshot, len(new))
    report = StepReport(collected, snapshot, new, champion=champion_path.name)
    if ctx.impact is not None:
        report.guard = ctx.impact.step(ctx.engine, ctx.ops_engine, ctx.config)
    if ctx.retrain is not None and any(a.retrain for a in new):
        opts = ctx.retrain
        since = (
            datetime.now(UTC).replace(tzinfo=None) - timedelta(days=opts.history_days)
            if opts.history_days
            else None
        )
        logger.info("retraining after %d alert(s)", sum(a.retrain for a in new))
        report.retrained = retrain(
            ctx.engine, ctx.registry, since=since, margin=opts.margin, models=opts.models,
            max_epochs=opts.max_epochs, min_tasks=opts.min_tasks, settings=settings,
            trainer=ctx.trainer, loader=ctx.loader,
        )  # fmt: skip
        logger.info("retrain: %s", report.retrained.reason)
    logger.info(
        "monitor step: %d task(s) collected, %d new alert(s), champion %s",
        collected.n_collected, len(new), report.champion,
    )  # fmt: skip
    return report


def parse_interval(every: str) -> float:
    """Seconds in a pandas-style interval (``90s``, ``15min``, ``1h``, ``1D``)."""
    try:
        seconds = pd.Timedelta(every).total_seconds()
    except ValueError as exc:
        raise ValueError(f"--every {every!r} is not an interval such as 15min, 1h or 1D") from exc
    if seconds <= 0:
        raise ValueError(f"--every {every!r} must be positive")
    return seconds


class StopFlag:
    """Set by SIGINT/SIGTERM (or by hand); the loop checks it between steps."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signal: int | None = None

    def __call__(self, signum: int, _frame: object) -> None:
        if self.signal is None:
            logger.info("signal %d: finishing the current step, then exiting", signum)
        self.signal = signum
        self.event.set()

    @property
    def is_set(self) -> bool:
        return self.event.is_set()


def run_loop(
    step: Callable[[], object],
    every_s: float,
    *,
    stop: StopFlag | None = None,
    max_steps: int | None = None,
    install_signals: bool = True,
) -> int:
    """Run ``step`` every ``every_s`` seconds until stopped; exit code 0.

    A failing step is logged and retried at the next interval: a database that is down for
    an hour must not end the loop.
    """
    stop = stop or StopFlag()
    previous: dict[int, Any] = {}
    if install_signals and threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, stop)
    n_steps = 0
    try:
        while not stop.is_set:
            try:
                step()
            except Exception:
                logger.exception("monitor step failed; next try in %.0f s", every_s)
            n_steps += 1
            if max_steps is not None and n_steps >= max_steps:
                break
            stop.event.wait(every_s)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0
