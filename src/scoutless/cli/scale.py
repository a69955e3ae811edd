"""What ``--scheduler`` adds to ``data build``, ``train`` and ``retrain`` (one place, so the
verbs' own modules only branch to it)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from scoutless.cli.errors import UserError
from scoutless.cli.lazy import get_settings

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID

    from distributed import Client
    from scoutless.history.build import TruthReader

SchedulerOption = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="run on Dask: 'local', 'local:N' (N workers) or a scheduler address "
        "(tcp://host:8786); absent: one process",
    ),
]


@contextlib.contextmanager
def cluster(scheduler: str, console: Console) -> Iterator[Client]:
    """A client on the cluster ``scheduler`` names; exit 2 with the reason when there is none."""
    from scoutless.distributed.cluster import SchedulerError, connect, parse_scheduler

    try:
        spec = parse_scheduler(scheduler)
        assert spec is not None
        with connect(spec, get_settings().distributed) as client:
            yield client
    except SchedulerError as exc:
        raise UserError(str(exc)) from exc


@contextlib.contextmanager
def fitter(scheduler: str | None, console: Console) -> Iterator[object]:
    """A :class:`DistributedFitter` on the cluster ``scheduler`` names; ``None`` without one.

    Exits 2 when the cluster cannot be reached, 1 when the torchrun job fails."""
    if scheduler is None:
        yield None
        return
    from scoutless.distributed.ddp import TorchrunError
    from scoutless.distributed.fitting import DistributedFitter

    try:
        with cluster(scheduler, console) as client:
            yield DistributedFitter.from_settings(client, get_settings().distributed)
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
    read_truth: TruthReader | None = None,
):  # type: ignore[no-untyped-def]
    """``data build --scheduler``: the partitioned table in ``out``; returns (build, report).

    ``read_truth`` reads a synthetic history's latent truth from the database; an export's
    (``scoutless_synthetic_truth/``) gets the generator's probabilities."""
    from rich.progress import Progress

    from scoutless.distributed.build import build_partitioned_table
    from scoutless.distributed.sources import db_partitions, export_partitions
    from scoutless.history.synthetic import bayes_probabilities

    settings = get_settings()
    per = settings.distributed.partition_tasks
    with cluster(scheduler, console) as client, Progress(console=console, transient=True) as bar:
        tasks: dict[str, TaskID] = {}

        def on_progress(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done)

        bar.add_task("partitioning history", total=None)
        if export is not None:
            parts = export_partitions(export, per, probabilities=bayes_probabilities)
        else:
            url = db_url or settings.resolved_db_url()
            parts = db_partitions(url, per, since, read_truth=read_truth)
        return build_partitioned_table(
            client, parts, out, settings=settings, bins_file=bins, strict=strict,
            on_progress=on_progress,
        )  # fmt: skip
