"""``scoutless listen`` (JEDI's task-status messages → scout predictions) and
``scoutless taskparams`` (fill a task's parameters before it is submitted)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from scoutless.cli.errors import UserError
from scoutless.cli.lazy import LazyConsole, get_settings

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from rich.table import Table

    from scoutless.config import Settings
    from scoutless.service.pipeline import Pipeline

console = LazyConsole(stderr=True)

PolicyOption = Annotated[
    str | None, typer.Option(help="argmax, safe, risk, value or cost (default: settings)")
]
AlphaOption = Annotated[
    float | None, typer.Option(help="under-allocation bound of the risk and value policies")
]


def _refuse_unused_alpha(policy: str, alpha: float | None) -> None:
    """Exit 2 when ``--alpha`` is given with a policy that ignores it (as the service's 422)."""
    from scoutless.allocation.policies import unused_alpha

    if problem := unused_alpha(policy, alpha):
        raise UserError(f"--alpha: {problem}")


def _pipeline(  # type: ignore[no-untyped-def]
    bundle: Path, executor: ThreadPoolExecutor, settings: Settings
):
    from scoutless.ops.registry import resolve_champion
    from scoutless.service.pipeline import Pipeline
    from scoutless.service.serving import load_bundle_default

    predictor = load_bundle_default(resolve_champion(bundle))
    return Pipeline(predictor, None, executor, safe_recall=settings.service.default_safe_recall,
                    settings=settings)  # fmt: skip


def listen(
    bundle: Annotated[
        Path, typer.Option(exists=True, help="bundle folder, or registry folder (champion)")
    ],
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
    import logging
    import signal
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from scoutless.config import updated
    from scoutless.history.panda_db import existing_database
    from scoutless.panda.broker import StompBroker, tls_files
    from scoutless.panda.listener import TaskListener
    from scoutless.panda.telemetry import HealthServer

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    given = {"broker": broker, "subscribe": subscribe, "publish": publish, "policy": policy,
             "alpha": alpha, "max_age_s": max_age, "health_port": health_port}  # fmt: skip
    settings = get_settings()
    s = updated(settings.listener, **given)
    _refuse_unused_alpha(s.policy, alpha)
    url = db or settings.resolved_db_url()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with ThreadPoolExecutor(4, thread_name_prefix="target") as executor:
        pipeline = _pipeline(bundle, executor, settings)
        engine = existing_database(url, schema=settings.db_schema)
        stomp = StompBroker(s.broker, s.subscribe, username=s.username, passcode=s.passcode,
                            prefetch=s.prefetch, heartbeat_ms=s.heartbeat_ms, vhost=s.vhost,
                            tls=tls_files(s))  # fmt: skip
        listener = TaskListener(pipeline, engine, stomp, s, calibration=_calibration(bundle))
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


def dead_letters(
    db: Annotated[
        str | None, typer.Option(help="the listener's database (default: settings)")
    ] = None,
    limit: Annotated[int, typer.Option(help="show this many of the latest")] = 20,
) -> None:
    """Messages the listener gave up on (the dead letter): counts and the latest, with why."""
    from rich.markup import escape
    from rich.table import Table

    from scoutless.history.panda_db import existing_database
    from scoutless.panda import dead_letters as dl

    engine = existing_database(db or get_settings().resolved_db_url())
    try:
        counts, latest = dl.counts(engine), dl.recent(engine, limit)
    finally:
        engine.dispose()
    total = sum(counts.values())
    by_kind = ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none"
    typer.echo(f"dead letters: {total} ({by_kind})")
    if not latest:
        return
    table = Table(title=f"latest {len(latest)}")
    for name in ("#", "when (UTC)", "kind", "tries", "task", "reason", "body"):
        table.add_column(name, overflow="fold")
    for d in latest:
        table.add_row(
            str(d.id), f"{d.received_at:%Y-%m-%d %H:%M:%S}", d.kind, str(d.attempts),
            str(d.jeditaskid or "-"), escape(d.reason), escape(dl.one_line(d.body, 80)),
        )  # fmt: skip
    LazyConsole().print(table)


def _calibration(bundle: Path):  # type: ignore[no-untyped-def]
    """The registry's calibration in force, re-read on each call (None for a bundle)."""
    from scoutless.layout import is_registry
    from scoutless.ops.promise import current_calibration

    return (lambda: current_calibration(bundle)) if is_registry(bundle) else None


def _read_taskparams(file: Path, site: Any) -> dict[str, Any]:
    """The file's task parameters, every field within its domain, or one clear error
    before any model or service is asked."""
    from scoutless.features.domains import DomainError, check_taskparams, domains

    try:
        params = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"{file}: not a task-parameter JSON: {exc}") from exc
    if not isinstance(params, dict):
        raise UserError(f"{file}: expected a JSON object of task parameters, "
                        f"not a {type(params).__name__}")  # fmt: skip
    try:
        check_taskparams(params, domains(site))
    except DomainError as exc:
        raise UserError(f"{file}: {exc}") from exc
    return params


def taskparams(
    file: Annotated[
        Path,
        typer.Argument(exists=True, help="task-parameter JSON, as given to panda-client"),
    ],
    bundle: Annotated[
        Path | None, typer.Option(exists=True, help="predict with this bundle")
    ] = None,
    service: Annotated[str | None, typer.Option(help="or ask this service (http://…)")] = None,
    policy: PolicyOption = None,
    alpha: AlphaOption = None,
    out: Annotated[Path | None, typer.Option(help="write here (default: stdout)")] = None,
    db: Annotated[
        str | None,
        typer.Option(help="database holding the rollout mode (default: settings.db_url)"),
    ] = None,
) -> None:
    """Fill skipScout (as the rollout decides) and ramCount/cpuTime/ioIntensity with units."""
    from scoutless.cli.errors import message

    if (bundle is None) == (service is None):
        raise UserError("give exactly one of --bundle or --service")
    settings = get_settings()
    params = _read_taskparams(file, settings.replay)
    s = settings.listener
    policy = policy or s.policy
    _refuse_unused_alpha(policy, alpha)
    if service is not None:
        from scoutless.client import Client

        with Client(service) as client:
            body = client.predict(taskparams=[dict(params)], policy=policy, alpha=alpha)
        targets, version = body["tasks"][0], str(body["model_version"])
    else:
        alpha = alpha or s.alpha
        from scoutless.service.request_input import InputError, InputErrors

        try:
            targets, version = _predict_locally(params, bundle, policy, alpha, settings)  # type: ignore[arg-type]
        except (InputError, InputErrors) as exc:  # named by field within the file
            raise UserError(message(exc, source=str(file))) from exc
    filled = _fill(params, targets, version, policy, db, settings)
    text = json.dumps(filled, indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        from scoutless.atomic import atomic_write_text

        atomic_write_text(out, text)
    console.print(_summary(params, filled))


def _predict_locally(
    params: dict[str, Any], bundle: Path, policy: str, alpha: float, settings: Settings,
) -> tuple[dict[str, Any], str]:  # fmt: skip
    """The targets ``taskparams --bundle`` fills in, and the bundle's version."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as executor:
        return predict_with(_pipeline(bundle, executor, settings), params, policy, alpha)


def predict_with(
    pipeline: Pipeline, params: dict[str, Any], policy: str, alpha: float
) -> tuple[dict[str, Any], str]:
    """One task's parameters through a loaded pipeline, as ``taskparams --bundle`` reads them."""
    result = pipeline.run([params], taskparams=True, policy=policy, alpha=alpha)
    return result.tasks[0], pipeline.version


def _fill(
    params: dict[str, Any], task: dict[str, Any], version: str, policy: str, db: str | None,
    settings: Settings,
) -> dict[str, Any]:  # fmt: skip
    """The filled parameters, skipScout as the rollout decides for this task (its name is
    the stable key before submission), the arm and its reason on stderr."""
    from scoutless.allocation.arms import assign, task_key
    from scoutless.features.extract import features_from_taskparams, parse_taskparams
    from scoutless.history.panda_db import existing_database
    from scoutless.jedi.messages import eligible_to_skip, fill_taskparams
    from scoutless.ops.rollout import default_state, read_rollout

    skip = settings.listener.skip_scout_policies
    url = db or settings.db_url
    # no database named: the configured default mode (nothing to read)
    engine = existing_database(url, schema=settings.db_schema) if url else None
    state = read_rollout(engine) if engine is not None else default_state()
    key = task_key(params.get("jediTaskID"), params.get("taskName"))
    features = features_from_taskparams(parse_taskparams(params))
    arm = assign(state, key, eligible_to_skip(task, policy, skip), features)
    console.print(f"rollout {state.describe()}: arm {arm.arm} ({arm.reason})")
    return fill_taskparams(
        params,
        task["targets"],
        version,
        policy,
        skip,
        time.time(),
        task.get("scout"),
        skip_scout=arm.skip_scout,
    )


def _summary(before: dict[str, Any], after: dict[str, Any]) -> Table:
    from rich.table import Table

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
