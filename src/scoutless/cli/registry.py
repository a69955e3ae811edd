"""`scoutless registry list|add|promote|rollback`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from scoutless.cli.errors import UserError
from scoutless.cli.lazy import LazyConsole

app = typer.Typer(no_args_is_help=True)
console = LazyConsole()

RegistryArg = Annotated[Path, typer.Argument(help="registry folder")]


def _fail(exc: Exception) -> UserError:
    return UserError(str(exc))


@app.command("list")
def list_versions(registry: RegistryArg) -> None:
    """Every version, the champion marked, and the promotion history."""
    from rich.table import Table

    from scoutless.ops import registry as reg

    try:
        versions = reg.list_versions(registry)
    except reg.RegistryError as exc:
        raise _fail(exc) from exc
    table = Table(title=f"registry {registry}")
    for column in ("", "version", "created", "models", "targets"):
        table.add_column(column)
    for v in versions:
        models = v.manifest.get("training", {}).get("models") or ""
        targets = v.manifest.get("targets") or ""
        table.add_row(
            "★" if v.is_champion else "",
            v.version,
            str(v.created_at or "-"),
            ", ".join(map(str, models)) if isinstance(models, list | dict) else str(models),
            ", ".join(map(str, targets)) if isinstance(targets, list | dict) else str(targets),
        )
    console.print(table)
    history = reg.read_history(registry)
    if history:
        events = Table(title="champion history (latest last)")
        for column in ("time", "action", "version", "previous", "reason"):
            events.add_column(column)
        for record in history[-10:]:
            events.add_row(*(str(record.get(c) or "-") for c in ("time", "action", "version",
                                                                  "previous", "reason")))  # fmt: skip
        console.print(events)


@app.command("add")
def add(
    registry: RegistryArg,
    bundle: Annotated[Path, typer.Argument(exists=True, help="bundle folder to copy into the registry")],
    promote: Annotated[bool, typer.Option(help="make it the champion at once")] = False,
) -> None:
    """Copy a trained bundle into the registry as a new version."""
    from scoutless.ops import registry as reg

    try:
        version = reg.register(registry, bundle)
        if promote:
            reg.promote(registry, version, reason="registry add --promote")
    except reg.RegistryError as exc:
        raise _fail(exc) from exc
    console.print(f"registered {version}" + (" (champion)" if promote else ""))


@app.command("promote")
def promote(
    registry: RegistryArg,
    version: Annotated[str, typer.Argument(help="version id (see registry list)")],
    reason: Annotated[str, typer.Option(help="kept in registry.json's history")] = "manual",
) -> None:
    """Make a version the champion (refused unless it is a complete, loadable bundle)."""
    from scoutless.ops import registry as reg

    try:
        before = reg.champion_version(registry)
        reg.promote(registry, version, reason=reason)
    except reg.RegistryError as exc:
        raise _fail(exc) from exc
    console.print(f"champion: {before or '-'} → {version}")


@app.command("rollback")
def rollback(
    registry: RegistryArg,
    reason: Annotated[str, typer.Option(help="kept in registry.json's history")] = "manual",
) -> None:
    """Return to the champion the current one replaced."""
    from scoutless.ops import registry as reg

    try:
        before = reg.champion_version(registry)
        version = reg.rollback(registry, reason=reason)
    except reg.RegistryError as exc:
        raise _fail(exc) from exc
    console.print(f"champion: {before or '-'} → {version} (rollback)")
