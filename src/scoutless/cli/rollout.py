"""``scoutless rollout set shadow|canary|full`` (the kill switch) and ``rollout show``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from scoutless.cli.lazy import LazyConsole, get_settings

app = typer.Typer(no_args_is_help=True)
console = LazyConsole()

DbOpt = Annotated[
    str | None,
    typer.Option("--db", help="database of the listener's tables (default: settings)"),
]


def _engine(db: str | None, *, writes: bool = False) -> Any:
    """The listener's database: ``rollout set`` may start one in an existing folder;
    reading never creates one (a mistyped path is said as such)."""
    from scoutless.history.panda_db import existing_database, make_engine

    settings = get_settings()
    url, schema = db or settings.resolved_db_url(), settings.db_schema
    if writes:
        return make_engine(url, create_dirs=False, schema=schema)
    return existing_database(url, schema=schema)


def parse_scope(items: list[str]) -> dict[str, list[str]]:
    """``KEY=V1,V2`` items → {key: [values]}; a malformed item names itself."""
    from scoutless.allocation.arms import RolloutError

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
    reason: Annotated[str, typer.Option(help="why (kept with the change, one line)")] = "",
    force: Annotated[
        bool, typer.Option(help="full: promote without impact evidence (needs --reason)")
    ] = False,
    if_version: Annotated[
        int | None,
        typer.Option(help="write only if the rollout is still this version (rollout show's #)"),
    ] = None,
    db: DbOpt = None,
) -> None:
    """Switch the listener's rollout mode; it takes effect from the listener's next batch.

    The change is written only if nobody changed the rollout since it was read here; it is
    recorded as made by this account (``os:NAME``)."""
    from rich.markup import escape

    from scoutless.ops.rollout import already_skipped, os_identity, read_rollout, set_rollout

    engine = _engine(db, writes=True)
    before = read_rollout(engine)
    if mode == "full":
        reason = _full_reason(engine, before.mode, reason, force)
    state = set_rollout(
        engine, mode, share=share, seed=get_settings().rollout.seed if seed is None else seed,
        scope=parse_scope(scope or []),
        reason=reason, changed_by=os_identity(),
        expected_version=before.version if if_version is None else if_version,
    )  # fmt: skip
    kept = already_skipped(engine) if mode == "shadow" else []
    console.print(
        f"rollout: {escape(before.describe())} → [bold]{escape(state.describe())}[/bold] "
        f"(version {state.version}, by {escape(state.changed_by)})"
    )
    if mode == "shadow":
        console.print(f"{len(kept)} tasks already skipped their scouts and stay so")


def _full_reason(engine: Any, current: str, reason: str, force: bool) -> str:
    """The reason recorded for ``set full``: refused (RolloutError) without impact evidence
    in the window unless forced with a reason, which then says it was forced."""
    from rich.markup import escape

    from scoutless.allocation.arms import RolloutError
    from scoutless.ops.guard_rail import promotion_evidence

    if current == "canary":
        _show_evidence(engine)  # promotion is a person's decision: with the evidence
    evidence = promotion_evidence(engine, get_settings().rollout)
    if evidence.tripped:
        console.print(escape(evidence.message))
        return reason
    if not force:
        raise RolloutError(
            f"rollout set full refused: {evidence.message}. Run a canary first "
            "(rollout set canary --share P), or give --force --reason WHY"
        )
    if not reason.strip():
        raise RolloutError("rollout set full --force needs a --reason (kept with the change)")
    console.print(f"[yellow]forced without evidence: {escape(evidence.message)}[/yellow]")
    return f"forced without evidence ({evidence.message}): {reason}"


@app.command("show")
def show(
    db: DbOpt = None,
    changes: Annotated[int, typer.Option(help="show this many recent changes")] = 10,
) -> None:
    """The mode in force, its recent changes and, during a canary, the evidence so far."""
    from rich.markup import escape
    from rich.table import Table

    from scoutless.ops.rollout import history, read_rollout

    engine = _engine(db)
    state = read_rollout(engine)
    console.print(f"rollout: [bold]{escape(state.describe())}[/bold] (by "
                  f"{_plain(state.changed_by)}: {_plain(state.reason) or '-'})")  # fmt: skip
    table = Table(title="changes")
    for name in ("#", "when (UTC)", "mode", "by", "reason"):
        table.add_column(name)
    for s in history(engine)[-changes:]:
        table.add_row(str(s.version), f"{s.changed_at:%Y-%m-%d %H:%M:%S}",
                      escape(s.describe()), _plain(s.changed_by), _plain(s.reason))  # fmt: skip
    console.print(table)
    if state.mode == "canary":
        _show_evidence(engine)


def _plain(text: str) -> str:
    """A stored text as shown: one line, markup escaped (rows from before plain_text too)."""
    from rich.markup import escape

    from scoutless.ops.rollout import plain_text

    return escape(plain_text(text or ""))


def _show_evidence(engine: Any) -> None:
    """The canary's impact against its control, as collected so far."""
    from scoutless.cli.impact_tables import print_differences
    from scoutless.ops.impact import ImpactError, impact_report

    try:
        report = impact_report(engine, settings=get_settings().rollout)
    except ImpactError as exc:
        console.print(f"[yellow]no impact evidence: {exc}[/yellow]")
        return
    print_differences(console, report)
