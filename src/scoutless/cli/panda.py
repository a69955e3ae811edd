"""``scoutless listen`` (JEDI's task-status messages → scout predictions) and
``scoutless taskparams`` (fill a task's parameters before it is submitted)."""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from scoutless.atomic import atomic_write_text
from scoutless.config import get_settings

console = Console(stderr=True)

PolicyOption = Annotated[
    str | None, typer.Option(help="argmax, safe, risk, value or cost (default: settings)")
]
AlphaOption = Annotated[
    float | None, typer.Option(help="under-allocation bound of the risk and value policies")
]


def _pipeline(bundle: Path, executor: ThreadPoolExecutor):  # type: ignore[no-untyped-def]
    from scoutless.ops.registry import resolve_champion
    from scoutless.service.pipeline import Pipeline
    from scoutless.service.serving import load_bundle_default

    safe_recall = get_settings().service.default_safe_recall
    predictor = load_bundle_default(resolve_champion(bundle))
    return Pipeline(predictor, None, executor, safe_recall=safe_recall)


def listen(
    bundle: Annotated[Path, typer.Option(help="bundle folder, or registry folder (champion)")],
    db: Annotated[str | None, typer.Option(help="PanDA database URL (default: settings)")] = None,
    broker: Annotated[str | None, typer.Option(help="stomp://HOST:PORT")] = None,
    subscribe: Annotated[str | None, typer.Option(help="task_status destination")] = None,
    publish: Annotated[str | None, typer.Option(help="scout_prediction destination")] = None,
    policy: PolicyOption = None,
    alpha: AlphaOption = None,
    max_age: Annotated[float | None, typer.Option(help="ignore older messages (s)")] = None,
    health_port: Annotated[int | None, typer.Option(help="/healthz and /metrics port")] = None,
) -> None:
    """Predict every task JEDI defines and publish the prediction for JEDI to apply."""
    from scoutless.history.panda_db import make_engine
    from scoutless.panda.broker import StompBroker
    from scoutless.panda.listener import TaskListener
    from scoutless.panda.telemetry import HealthServer

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    given = {"broker": broker, "subscribe": subscribe, "publish": publish, "policy": policy,
             "alpha": alpha, "max_age_s": max_age, "health_port": health_port}  # fmt: skip
    s = get_settings().listener.model_copy(update={k: v for k, v in given.items() if v is not None})
    url = db or get_settings().resolved_db_url()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with ThreadPoolExecutor(4, thread_name_prefix="target") as executor:
        pipeline = _pipeline(bundle, executor)
        engine = make_engine(url, create_dirs=False)
        stomp = StompBroker(s.broker, s.subscribe, username=s.username, passcode=s.passcode,
                            prefetch=s.prefetch, heartbeat_ms=s.heartbeat_ms,
            vhost=s.vhost)  # fmt: skip
        listener = TaskListener(pipeline, engine, stomp, s)
        health = (
            HealthServer(s.health_port, listener.metrics, listener.healthy).start()
            if s.health_port is not None
            else None
        )
        console.print(
            f"listening on {s.broker}{s.subscribe} → {s.publish}; model {pipeline.version}, "
            f"policy {s.policy}; health on :{health.port if health else '-'}"
        )
        try:
            listener.run(stop)
        finally:
            if health is not None:
                health.stop()
            engine.dispose()


def taskparams(
    file: Annotated[Path, typer.Argument(help="task-parameter JSON, as given to panda-client")],
    bundle: Annotated[Path | None, typer.Option(help="predict with this bundle")] = None,
    service: Annotated[str | None, typer.Option(help="or ask this service (http://…)")] = None,
    policy: PolicyOption = None,
    alpha: AlphaOption = None,
    out: Annotated[Path | None, typer.Option(help="write here (default: stdout)")] = None,
) -> None:
    """Fill skipScout and ramCount/cpuTime/ioIntensity (with units) from the prediction."""
    if (bundle is None) == (service is None):
        console.print("[red]give exactly one of --bundle or --service")
        raise typer.Exit(code=2)
    try:
        params = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        console.print(f"[red]{file}: not a task-parameter JSON: {exc}")
        raise typer.Exit(code=2) from exc
    s = get_settings().listener
    policy, alpha = policy or s.policy, alpha or s.alpha
    if service is not None:
        from scoutless.client import Client

        with Client(service) as client:
            filled = client.fill_taskparams(params, policy=policy, alpha=alpha)
    else:
        filled = _fill_locally(params, bundle, policy, alpha)  # type: ignore[arg-type]
    text = json.dumps(filled, indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        atomic_write_text(out, text)
    console.print(_summary(params, filled))


def _fill_locally(
    params: dict[str, Any], bundle: Path, policy: str, alpha: float
) -> dict[str, Any]:
    from scoutless.jedi.messages import fill_taskparams

    with ThreadPoolExecutor(4) as executor:
        pipeline = _pipeline(bundle, executor)
        result = pipeline.run([params], taskparams=True, policy=policy, alpha=alpha)
    task = result.tasks[0]
    skip = get_settings().listener.skip_scout_policies
    return fill_taskparams(
        params, task["targets"], pipeline.version, policy, skip, time.time(), task.get("scout")
    )


def _summary(before: dict[str, Any], after: dict[str, Any]) -> Table:
    table = Table(title="task parameters")
    for name in ("parameter", "submitted", "filled"):
        table.add_column(name)
    for key in (
        "skipScout",
        "ramCount",
        "ramUnit",
        "cpuTime",
        "cpuTimeUnit",
        "ioIntensity",
        "ioIntensityUnit",
    ):
        table.add_row(key, str(before.get(key, "-")), str(after.get(key, "-")))
    return table
