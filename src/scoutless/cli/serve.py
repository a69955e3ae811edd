"""`scoutless serve`: the HTTP prediction service (uvicorn), one bundle or a gateway."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from scoutless.config import get_settings

console = Console(stderr=True)


def serve(
    bundle: Annotated[
        Path | None,
        typer.Option(
            exists=True, help="bundle folder, or registry folder (its champion is followed)"
        ),
    ] = None,
    db: Annotated[str | None, typer.Option(help="PanDA database URL (default: settings)")] = None,
    log_db: Annotated[
        str | None, typer.Option(help="prediction-log database URL (default: --db)")
    ] = None,
    host: Annotated[str | None, typer.Option(help="bind address")] = None,
    port: Annotated[int | None, typer.Option(help="port")] = None,
    targets: Annotated[
        str | None, typer.Option(help="comma-separated subset of targets to host")
    ] = None,
    remote: Annotated[
        str | None,
        typer.Option(help="gateway mode: TARGET=http://host:port,… (no --bundle)"),
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="uvicorn worker processes")] = 1,
    poll: Annotated[float, typer.Option(help="seconds between champion checks")] = 5.0,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "warning",
) -> None:
    """Serve predictions over HTTP (POST /v1/predict, GET /v1/tasks/{id}/prediction …)."""
    import uvicorn

    from scoutless.service.app import OPTIONS_ENV, create_app

    if (bundle is None) == (remote is None):
        console.print("[red]give exactly one of --bundle (serve a model) or --remote (gateway)")
        raise typer.Exit(code=2)
    settings = get_settings()
    host = host or settings.service.host
    port = settings.service.port if port is None else port
    options = {
        "bundle": str(bundle) if bundle else None,
        "db_url": db,
        "log_db_url": log_db,
        "targets": [t.strip() for t in targets.split(",") if t.strip()] if targets else None,
        "remote": remote,
        "poll_s": poll,
    }
    _refuse_before_start(bundle, [db or settings.resolved_db_url(), log_db])
    _print_plan(options, host, port, workers)
    common = {"host": host, "port": port, "log_level": log_level, "access_log": False}
    if workers == 1:
        uvicorn.run(create_app(**options), **common)  # type: ignore[arg-type]
        return
    os.environ[OPTIONS_ENV] = json.dumps(options)
    from scoutless.service.workers import Supervisor  # one SO_REUSEPORT socket per worker

    try:
        code = Supervisor(workers, host, port, log_level).run()
    except OSError as exc:
        console.print(f"[red]cannot listen on {host}:{port}: {exc}")
        raise typer.Exit(code=1) from exc
    raise typer.Exit(code=code)


def _refuse_before_start(bundle: Path | None, urls: list[str | None]) -> None:
    """One line and exit 2, before any server starts, for a folder that is not a bundle
    (nor a registry with a champion) or a database URL whose driver is missing."""
    from scoutless.history.panda_db import DriverMissing, make_engine
    from scoutless.layout import BundleError, RegistryError, read_manifest, resolve_champion

    try:
        if bundle is not None:
            read_manifest(resolve_champion(bundle))
        for url in filter(None, urls):
            make_engine(url, create_dirs=False).dispose()  # connects to nothing yet
    except (BundleError, RegistryError, DriverMissing) as exc:
        console.print(f"cannot serve: {exc}", style="red", soft_wrap=True, markup=False)
        raise typer.Exit(code=2) from exc


def _print_plan(options: dict[str, object], host: str, port: int, workers: int) -> None:
    table = Table(title="scoutless serve", show_header=False)
    table.add_column("setting", style="bold")
    table.add_column("value")
    table.add_row("listen", f"http://{host}:{port}")
    table.add_row("workers", str(workers))
    for key, value in options.items():
        if value is not None:
            table.add_row(key, str(value))
    console.print(table)
