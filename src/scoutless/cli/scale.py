"""What ``--scheduler`` adds to ``data build``, ``train`` and ``retrain`` (one place, so the
verbs' own modules only branch to it)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import Progress

from scoutless.config import get_settings

SchedulerOption = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="run on Dask: 'local', 'local:N' (N workers) or a scheduler address "
        "(tcp://host:8786); absent: one process",
    ),
]


@contextlib.contextmanager
def fitter(scheduler: str | None, console: Console) -> Iterator[object]:
    """A :class:`DistributedFitter` on the cluster ``scheduler`` names; ``None`` without one.

    Exits 2 when the cluster cannot be reached, 1 when the torchrun job fails."""
    if scheduler is None:
        yield None
        return
    from scoutless.distributed.cluster import SchedulerError, connect, parse_scheduler
    from scoutless.distributed.ddp import TorchrunError
    from scoutless.distributed.fitting import DistributedFitter

    try:
        spec = parse_scheduler(scheduler)
        assert spec is not None
        with connect(spec) as client:
            yield DistributedFitter.from_settings(client, get_settings().distributed)
    except SchedulerError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(code=2) from exc
    except TorchrunError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(code=1) from exc


def build(
    console: Console,
    *,
    scheduler: str,
    out: Path,
    db_url: str | None,
    export: Path | None,
    bins: Path | None,
    strict: bool,
    since: datetime | None,
):  # type: ignore[no-untyped-def]
    """``data build --scheduler``: the partitioned table in ``out``; returns (build, report)."""
    from scoutless.distributed.build import build_partitioned_table
    from scoutless.distributed.cluster import SchedulerError, connect, parse_scheduler
    from scoutless.distributed.sources import db_partitions, export_partitions

    settings = get_settings()
    per = settings.distributed.partition_tasks
    try:
        spec = parse_scheduler(scheduler)
        assert spec is not None
        with connect(spec) as client, Progress(console=console, transient=True) as progress:
            bars: dict[str, object] = {}

            def on_progress(name: str, done: int, total: int) -> None:
                if name not in bars:
                    bars[name] = progress.add_task(name, total=total)
                progress.update(bars[name], completed=done)  # type: ignore[arg-type]

            progress.add_task("partitioning history", total=None)
            parts = (
                export_partitions(export, per) if export else db_partitions(db_url, per, since)  # type: ignore[arg-type]
            )
            return build_partitioned_table(
                client, parts, out, settings=settings, bins_file=bins, strict=strict,
                on_progress=on_progress,
            )  # fmt: skip
    except SchedulerError as exc:
        console.print(f"[red]{exc}[/]")
        raise typer.Exit(code=2) from exc
