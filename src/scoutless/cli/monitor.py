"""`scoutless monitor collect|report|impact|promise|run`."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import typer

from scoutless.cli.errors import UserError
from scoutless.cli.lazy import LazyConsole, get_settings
from scoutless.cli.options import positive
from scoutless.cli.output import FormatOption

app = typer.Typer(no_args_is_help=True)
console = LazyConsole()

DbOpt = Annotated[
    str | None, typer.Option("--db", help="PanDA history database URL (default: settings)")
]
LogDbOpt = Annotated[
    str | None,
    typer.Option("--log-db", help="database of the prediction log and ops tables (default: --db)"),
]
RegistryOpt = Annotated[
    Path, typer.Option("--registry", help="registry folder (or a single bundle folder)")
]
EveryOpt = Annotated[str, typer.Option(help="window size: 1h, 1D, 7D …")]

_positive_days = positive("days")


DaysOpt = Annotated[float, typer.Option(help="look back this many days", callback=_positive_days)]
HistoryDaysOpt = Annotated[
    float, typer.Option(help="retrain on this many days", callback=_positive_days)
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="alert rules TOML (see docs/operations.md)")
]


def open_engines(db: str | None, log_db: str | None) -> tuple[Any, Any]:
    from scoutless.history.panda_db import existing_database, make_engine  # `--help` stays light

    settings = get_settings()
    engine = existing_database(db or settings.resolved_db_url(), schema=settings.db_schema)
    return engine, make_engine(log_db, schema=settings.db_schema) if log_db else engine


def _load_champion(registry: Path) -> Any:
    from scoutless.bundle import load_bundle
    from scoutless.ops.registry import RegistryError, resolve_champion

    try:
        return load_bundle(resolve_champion(registry))
    except (RegistryError, FileNotFoundError) as exc:
        raise UserError(str(exc)) from exc


def fmt_number(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _print_frame(frame: Any, title: str) -> None:
    from rich.table import Table

    table = Table(title=title)
    for column in frame.columns:
        table.add_column(str(column), justify="left" if frame[column].dtype == object else "right")
    for row in frame.itertuples(index=False):
        table.add_row(*[fmt_number(v) for v in row])
    console.print(table if len(frame) else f"[dim]{title}: no data[/dim]")


@app.command("collect")
def collect(
    registry: RegistryOpt,
    db: DbOpt = None,
    log_db: LogDbOpt = None,
    recollect: Annotated[bool, typer.Option(help="recompute tasks already collected")] = False,
) -> None:
    """Compute actual classes of finished predicted tasks (training's target code, serving bins)."""
    from rich.table import Table

    from scoutless.ops.actuals import collect_actuals

    engine, ops_engine = open_engines(db, log_db)
    predictor = _load_champion(registry)
    with console.status("collecting actuals"):
        result = collect_actuals(
            engine, predictor.bins, settings=get_settings(), recollect=recollect,
            log_engine=ops_engine,
        )  # fmt: skip
    table = Table(title="actuals collected")
    table.add_column("figure")
    table.add_column("tasks", justify="right")
    for name, value in result.__dict__.items():
        table.add_row(name.removeprefix("n_").replace("_", " "), str(value))
    console.print(table)


@app.command("report")
def report(
    registry: RegistryOpt,
    db: DbOpt = None,
    log_db: LogDbOpt = None,
    every: EveryOpt = "1D",
    days: DaysOpt = 30.0,
    html: Annotated[Path | None, typer.Option(help="write the HTML page here")] = None,
    all_versions: Annotated[
        bool, typer.Option(help="judge every model's predictions, not only the champion's")
    ] = False,
) -> None:
    """Quality, feature drift and class-prior drift per window, as tables (and HTML)."""
    from scoutless.ops.actuals import read_actuals
    from scoutless.ops.alerts import read_alerts
    from scoutless.ops.monitoring import build_snapshot
    from scoutless.ops.prediction_log import PredictionLog
    from scoutless.ops.report import render_report

    _, ops_engine = open_engines(db, log_db)
    predictor = _load_champion(registry)
    since = datetime.now(UTC) - timedelta(days=days)
    snapshot = build_snapshot(
        PredictionLog(ops_engine).read(since=since),
        read_actuals(ops_engine),
        predictor.bins,
        reference=predictor.reference(),
        specs=list(predictor.feature_specs),
        every=every,
        model_version=None if all_versions else str(predictor.version),
    )
    _print_frame(snapshot.performance, "prediction quality per window")
    drift = snapshot.feature_drift
    if not drift.empty:
        drift = drift.sort_values("psi", ascending=False).groupby("window_start").head(5)
        drift = drift.sort_values(["window_start", "psi"], ascending=[True, False])
    _print_frame(drift, "feature drift (top 5 by PSI per window)")
    _print_frame(snapshot.prior_drift, "class-prior drift")
    alerts = read_alerts(ops_engine)
    if html is not None:
        from scoutless.ops.impact import ImpactError, impact_report

        try:  # the rollout's impact where it has been collected (monitor impact)
            rollout = get_settings().rollout
            report = impact_report(ops_engine, every=every, since=since, settings=rollout)
            impact = (report, rollout)
        except ImpactError:
            impact = None
        path = render_report(snapshot, predictor.bins, html, alerts=alerts, impact=impact)
        console.print(f"HTML report: {path}")


@app.command("impact")
def impact(
    db: DbOpt = None,
    log_db: LogDbOpt = None,
    every: Annotated[
        str | None,
        typer.Option(help="window size: 1h, 1D, 7D …; default: the smallest giving ≤ 40 windows"),
    ] = None,
    days: DaysOpt = 30.0,
    html: Annotated[Path | None, typer.Option(help="write the HTML page here")] = None,
    collect: Annotated[bool, typer.Option(help="copy newly finished jobs first")] = True,
    guard: Annotated[
        bool, typer.Option(help="apply the guard rail (back to shadow on harm)")
    ] = False,
    config: ConfigOpt = None,
    fmt: FormatOption = "table",
) -> None:
    """Skipping scouts against keeping them, per rollout arm and window, from PanDA's tables."""
    from scoutless.cli.impact_tables import give_impact
    from scoutless.cli.output import checked, notes
    from scoutless.ops.impact import impact_report, window_for
    from scoutless.ops.impact_store import collect_impact
    from scoutless.ops.report import impact_verdict

    said = notes(checked(fmt), console)
    if every is None:
        every = window_for(days)
        said.print(f"window {every}: {days:g} days in at most 40 windows (--every to choose)")
    engine, ops_engine = open_engines(db, log_db)
    if collect:
        done = collect_impact(engine, ops_engine)
        said.print(f"collected {done.n_read} tasks ({done.n_final} final), "
                   f"{done.n_jobs} jobs, of {done.n_predicted} predicted")  # fmt: skip
    since = datetime.now(UTC) - timedelta(days=days)
    rollout = get_settings().rollout
    try:
        result = impact_report(ops_engine, every=every, since=since, settings=rollout)
    except ValueError as exc:  # --every that pandas cannot read (ImpactError is one too)
        raise UserError(f"{exc}") from exc
    verdict = None if guard else impact_verdict(result, rollout)
    give_impact(fmt, console, result, verdict)
    if verdict is not None:
        said.print(f"[bold]{verdict}[/bold] (--guard applies it)")
    else:
        _guard(ops_engine, result, config)
    if html is not None:
        from scoutless.ops.report import render_impact

        said.print(f"HTML report: {render_impact(result, html, settings=rollout, every=every)}")


def _guard(ops_engine: Any, result: Any, config: Path | None) -> None:
    from scoutless.ops.alerts import load_alert_config
    from scoutless.ops.guard_rail import check_guard_rail

    try:
        alert_config = load_alert_config(config)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    verdict = check_guard_rail(
        ops_engine, result, config=alert_config, settings=get_settings().rollout
    )
    style = "[bold red]" if verdict.tripped else ""
    console.print(
        f"{style}guard rail: {verdict.message}"
        + ("; rollout moved back to shadow" if verdict.tripped else "")
    )


@app.command("promise")
def promise(
    registry: RegistryOpt,
    db: DbOpt = None,
    log_db: LogDbOpt = None,
    every: EveryOpt = "1D",
    days: DaysOpt = 30.0,
    refit_days: Annotated[
        float | None,
        typer.Option(
            help="on a breach, refit the calibration on this many recent days",
            callback=_positive_days,
        ),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Realised under-allocation against each prediction's alpha, per target and group."""
    from scoutless.ops import promise as kept
    from scoutless.ops.actuals import collect_actuals, read_actuals
    from scoutless.ops.alerts import fire, load_alert_config
    from scoutless.ops.prediction_log import PredictionLog

    engine, ops_engine = open_engines(db, log_db)
    try:
        alert_config = load_alert_config(config)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    settings = get_settings()
    collect_actuals(engine, _load_champion(registry).bins, settings=settings, log_engine=ops_engine)
    now = datetime.now(UTC)
    predictions = PredictionLog(ops_engine).read(since=now - timedelta(days=days))
    rows = kept.judged(predictions, read_actuals(ops_engine))
    table = kept.promise_by_window(rows, every, settings.rollout)
    shown = table[(table["group"] == "all") | table["breached"].astype(bool)]
    _print_frame(shown, "under-allocation against alpha (all, and breaching groups)")
    fired = fire(ops_engine, kept.promise_alerts(table), alert_config)
    if fired and refit_days is not None:
        since = (now - timedelta(days=refit_days)).replace(tzinfo=None)
        alpha = float(rows["alpha"].astype(float).median())
        s = settings.rollout
        recal = kept.refit(rows, since, alpha, min_n=s.promise_min_tasks)
        path = kept.register_calibration(registry, recal)
        console.print(f"calibration {recal.version} registered ({path}): {recal.factors}")


@app.command("run")
def run(
    registry: RegistryOpt,
    db: DbOpt = None,
    log_db: LogDbOpt = None,
    every: Annotated[str, typer.Option(help="time between steps: 15min, 1h, 1D …")] = "1h",
    config: ConfigOpt = None,
    once: Annotated[bool, typer.Option(help="one step, then exit (for cron/systemd)")] = False,
    retrain_on_alert: Annotated[bool, typer.Option(help="retrain when a rule says so")] = True,
    history_days: HistoryDaysOpt = 30.0,
    margin: Annotated[float, typer.Option(help="accuracy gain needed to promote")] = 0.01,
    metrics_port: Annotated[
        int | None, typer.Option(help="serve Prometheus gauges on 127.0.0.1:PORT")
    ] = None,
    impact: Annotated[
        bool, typer.Option(help="also collect the rollout's impact and apply its guard rail")
    ] = False,
) -> None:
    """Collect → check alert rules → retrain on alert, every interval, until SIGINT/SIGTERM."""
    from scoutless.ops.alerts import load_alert_config
    from scoutless.ops.guard_rail import ImpactWatch
    from scoutless.ops.loop import (
        MonitorContext,
        RetrainOptions,
        monitor_step,
        parse_interval,
        run_loop,
    )
    from scoutless.ops.monitoring import MonitorGauges

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        interval = parse_interval(every)
        alert_config = load_alert_config(config)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    engine, ops_engine = open_engines(db, log_db)
    gauges = MonitorGauges()
    if metrics_port is not None:
        from prometheus_client import start_http_server

        start_http_server(metrics_port, addr="127.0.0.1", registry=gauges.registry)
    settings = get_settings()
    ctx = MonitorContext(
        engine=engine,
        registry=registry,
        settings=settings,
        config=alert_config,
        log_engine=ops_engine,
        retrain=RetrainOptions(history_days=history_days, margin=margin)
        if retrain_on_alert
        else None,
        gauges=gauges,
        impact=ImpactWatch(settings.rollout, gauges.registry, alert_config.every)
        if impact
        else None,
    )
    if once:
        monitor_step(ctx)
        return
    raise typer.Exit(code=run_loop(lambda: monitor_step(ctx), interval))
