"""`scoutless serve`: the HTTP prediction service (uvicorn), one bundle or a gateway."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from scoutless.cli.lazy import LazyConsole, get_settings, masked_url
from scoutless.cli.options import positive

if TYPE_CHECKING:
    from scoutless.config import Settings

console = LazyConsole(stderr=True)


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
    poll: Annotated[
        float, typer.Option(help="seconds between champion checks", callback=positive("seconds"))
    ] = 5.0,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "warning",
) -> None:
    """Serve predictions over HTTP (POST /v1/predict, GET /v1/tasks/{id}/prediction …).

    Tokens come from Settings.service.tokens_file or SCOUTLESS_SERVICE__TOKENS, never from
    the command line; without any, the service listens on loopback only."""
    import uvicorn

    from scoutless.service.app import OPTIONS_ENV, create_app
    from scoutless.service.http_head import http_protocol

    settings = get_settings()
    host = host or settings.service.host
    port = settings.service.port if port is None else port
    _refuse_exposed(bundle, remote, host, settings)
    db, log_db = (_with_password(url, settings) for url in (db, log_db))
    options = {
        "bundle": str(bundle) if bundle else None,
        "db_url": db,
        "log_db_url": log_db,
        "targets": [t.strip() for t in targets.split(",") if t.strip()] if targets else None,
        "remote": remote,
        "poll_s": poll,
    }
    _refuse_before_start(bundle, db or settings.resolved_db_url(), log_db)
    _print_plan(options, host, port, workers, _who(settings))
    common = {"host": host, "port": port, "log_level": log_level, "access_log": False,
              "http": http_protocol(settings.service)}  # fmt: skip
    if workers == 1:
        uvicorn.run(create_app(**options), **common)  # type: ignore[arg-type]
        return
    if bundle is not None:  # what an admin reload chooses, every worker follows
        options["pointer"] = str(_fresh_pointer(settings, port))
    os.environ[OPTIONS_ENV] = json.dumps(options)
    _supervise(workers, host, port, log_level)


def _supervise(workers: int, host: str, port: int, log_level: str) -> None:
    """Run the workers (one SO_REUSEPORT socket each) and exit with their code."""
    from scoutless.service.workers import Supervisor

    try:
        code = Supervisor(workers, host, port, log_level).run()
    except OSError as exc:
        from scoutless.cli.errors import UserError

        raise UserError(f"cannot listen on {host}:{port}: {exc}") from exc
    raise typer.Exit(code=code)


def _refuse_before_start(bundle: Path | None, history_url: str, log_url: str | None) -> None:
    """Refuse in one line (exit 2), before any server starts: a folder that is not a bundle
    (nor a registry with a champion), a SQLite history that does not exist (reads by id
    need one, and a mistyped path must not become an empty database), text that is not a
    database URL, or a URL whose driver is missing."""
    from scoutless.cli.errors import UserError
    from scoutless.config import BadDatabaseUrl
    from scoutless.history.panda_db import DatabaseUnavailable, make_engine
    from scoutless.layout import BundleError, RegistryError, read_manifest, resolve_champion

    try:
        if bundle is not None:
            read_manifest(resolve_champion(bundle))
            make_engine(history_url, read_only=True).dispose()  # connects to nothing yet
        if log_url is not None:
            make_engine(log_url, create_dirs=False).dispose()
    except (BundleError, RegistryError, DatabaseUnavailable, BadDatabaseUrl) as exc:
        raise UserError(f"cannot serve: {exc}") from exc


def _fresh_pointer(settings: Settings, port: int) -> Path:
    """The file through which the workers share an admin reload's choice (none yet)."""
    pointer = settings.workdir / f"serve-{port}.pointer"
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.unlink(missing_ok=True)
    return pointer


def _refuse_exposed(bundle: Path | None, remote: str | None, host: str, settings: Settings) -> None:
    """Exit 2 for both or neither of --bundle and --remote, and before listening off
    loopback with no token configured (saying how to configure one)."""
    from scoutless.cli.errors import UserError
    from scoutless.service.auth import Authenticator, refuse_exposed_bind

    if (bundle is None) == (remote is None):
        raise UserError("give exactly one of --bundle (serve a model) or --remote (gateway)")
    why = refuse_exposed_bind(host, settings.service)
    try:
        Authenticator(settings.service)  # a bad tokens file or JWKS: said now, not per request
    except ValueError as exc:
        why = f"cannot serve: {exc}"
    if why:
        raise UserError(why)


def _with_password(url: str | None, settings: Settings) -> str | None:
    """A given URL with the password from the settings' file or environment; a password
    given on the command line is warned about (``ps`` shows it to every user)."""
    if url is None:
        return None
    from scoutless.config import parse_db_url, with_password

    if parse_db_url(url).password:
        console.print("warning: a database password on the command line is visible to every "
                      "user (ps); use SCOUTLESS_DB_PASSWORD_FILE", style="yellow", markup=False)  # fmt: skip
    return with_password(url, settings.db_password_file, settings.db_password)


def _who(settings: Settings) -> str:
    """Who may call, in a few words (no secret)."""
    from scoutless.service.auth import Authenticator

    auth = Authenticator(settings.service)
    if auth.open_to_loopback:
        return "loopback callers only (no token configured)"
    named = sorted({p.name for p in auth.tokens.values()})
    oidc = ", OIDC tokens" if auth.jwks is not None else ""
    return f"bearer tokens: {', '.join(named) or 'none'}{oidc}"


def _print_plan(options: dict[str, object], host: str, port: int, workers: int, who: str) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title="scoutless serve", show_header=False)
    table.add_column("setting", style="bold")
    table.add_column("value")
    table.add_row("listen", f"http://{host}:{port}")
    table.add_row("callers", Text(who))
    table.add_row("workers", str(workers))
    for key, value in options.items():
        if value is not None:
            table.add_row(key, Text(masked_url(str(value))))
    console.print(table)
