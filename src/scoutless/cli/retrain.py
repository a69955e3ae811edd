"""`scoutless retrain`: a challenger trained on recent history, promoted only if better."""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Annotated

import typer

from scoutless.cli import scale
from scoutless.cli.lazy import get_settings
from scoutless.cli.monitor import DbOpt, RegistryOpt, console, fmt_number, open_engines


def _parse_date(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError as exc:
        raise typer.BadParameter(f"--since {value!r}: expected a date such as 2026-01-31") from exc


def retrain(
    registry: RegistryOpt,
    db: DbOpt = None,
    since: Annotated[
        str | None, typer.Option(help="train on tasks created since this date (ISO)")
    ] = None,
    margin: Annotated[float, typer.Option(help="mean accuracy gain needed to promote")] = 0.01,
    models: Annotated[str, typer.Option(help="comma-separated model kinds")] = "xgb",
    max_epochs: Annotated[int | None, typer.Option(min=1, help="cap DNN epochs")] = None,
    scheduler: scale.SchedulerOption = None,
) -> None:
    """Train a challenger on recent history; promote it only if it beats the champion."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from scoutless.ops.retrain import retrain as run_retrain
    from scoutless.training import train_bundle

    engine, _ = open_engines(db, None)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with (
        scale.fitter(scheduler, console) as fit_model,
        Progress(*columns, console=console, transient=True) as progress,
    ):
        task = progress.add_task("retraining", total=None)
        result = run_retrain(
            engine, registry, since=_parse_date(since), margin=margin,
            models=tuple(m.strip() for m in models.split(",") if m.strip()),
            max_epochs=max_epochs, settings=get_settings(),
            on_step=lambda msg: progress.update(task, description=msg),
            trainer=functools.partial(train_bundle, fit_model=fit_model),
        )  # fmt: skip
    table = Table(title=f"retrain: {'promoted' if result.promoted else 'kept champion'}")
    table.add_column("target")
    table.add_column(f"champion {result.champion_before or '-'}", justify="right")
    table.add_column(f"challenger {result.challenger}", justify="right")
    for target, score in result.challenger_scores.items():
        champion = result.champion_scores.get(target)
        table.add_row(target, "-" if champion is None else f"{champion:.3f}", f"{score:.3f}")
    table.add_row("mean", fmt_number(result.champion_score), fmt_number(result.challenger_score))
    console.print(table)
    console.print(f"{result.reason} (train {result.n_train}, hold-out {result.n_holdout} tasks)")
