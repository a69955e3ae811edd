"""``scoutless rollout set shadow|canary|full`` (the kill switch) and ``rollout show``."""

from __future__ import annotations

import getpass
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from scoutless.config import get_settings

app = typer.Typer(no_args_is_help=True)
console = Console()

DbOpt = Annotated[
    str | None,
    typer.Option("--db", help="database of the listener's tables (default: settings)"),
]


def _engine(db: str | None) -> Any:
    from scoutless.history.panda_db import make_engine

    return make_engine(db or get_settings().resolved_db_url(), create_dirs=False)


def parse_scope(items: list[str]) -> dict[str, list[str]]:
    """``KEY=V1,V2`` items → {key: [values]}; a malformed item names itself."""
    from scoutless.ops.rollout import RolloutError

    scope: dict[str, list[str]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        if not sep or not key.strip() or not values.strip():
            raise RolloutError(f"rollout.scope: {item!r} is not KEY=VALUE[,VALUE…]")
        scope.setdefault(key.strip(), []).extend(v.strip() for v in values.split(",") if v.strip())
    return scope


@app.command("set")
def set_mode(
    mode: Annotated[str, typer.Argument(help="shadow (the kill switch), canary or full")],
    share: Annotated[
        float | None, typer.Option(help="canary: share of eligible tasks, (0, 1]")
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="canary: assignment seed (default: settings)")
    ] = None,
    scope: Annotated[
        list[str] | None,
        typer.Option(help="canary/full scope, KEY=V1,V2 (gshare, workqueue_id, processingtype)"),
    ] = None,
    reason: Annotated[str, typer.Option(help="why (kept with the change)")] = "",
    db: DbOpt = None,
) -> None:
    """Switch the listener's rollout mode; it takes effect from the listener's next batch."""
    from scoutless.history.panda_db import DatabaseUnavailable
    from scoutless.ops.rollout import RolloutError, already_skipped, read_rollout, set_rollout

    engine = _engine(db)
    try:
        before = read_rollout(engine)
        if mode == "full" and before.mode == "canary":
            _show_evidence(engine)  # promotion is a person's decision: with the evidence
        state = set_rollout(
            engine, mode, share=share, seed=seed, scope=parse_scope(scope or []),
            reason=reason, changed_by=getpass.getuser(),
        )  # fmt: skip
        kept = already_skipped(engine) if mode == "shadow" else []
    except RolloutError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(code=2) from exc
    except DatabaseUnavailable as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(code=1) from exc
    console.print(f"rollout: {before.describe()} → [bold]{state.describe()}[/bold]")
    if mode == "shadow":
        console.print(f"{len(kept)} tasks already skipped their scouts and stay so")


@app.command("show")
def show(
    db: DbOpt = None,
    changes: Annotated[int, typer.Option(help="show this many recent changes")] = 10,
) -> None:
    """The mode in force, its recent changes and, during a canary, the evidence so far."""
    from scoutless.ops.rollout import history, read_rollout

    engine = _engine(db)
    state = read_rollout(engine)
    console.print(f"rollout: [bold]{state.describe()}[/bold] (by {state.changed_by}: "
                  f"{state.reason or '-'})")  # fmt: skip
    table = Table(title="changes")
    for name in ("#", "when (UTC)", "mode", "by", "reason"):
        table.add_column(name)
    for s in history(engine)[-changes:]:
        table.add_row(str(s.version), f"{s.changed_at:%Y-%m-%d %H:%M:%S}", s.describe(),
                      s.changed_by, s.reason)  # fmt: skip
    console.print(table)
    if state.mode == "canary":
        _show_evidence(engine)


def _show_evidence(engine: Any) -> None:
    """The canary's impact against its control, as collected so far."""
    from scoutless.cli.impact_tables import print_differences
    from scoutless.ops.impact import ImpactError, impact_report

    try:
        report = impact_report(engine)
    except ImpactError as exc:
        console.print(f"[yellow]no impact evidence: {exc}[/yellow]")
        return
    print_differences(console, report)
