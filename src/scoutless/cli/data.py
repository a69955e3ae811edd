"""``scoutless data generate|build|upgrade``: make a history, turn it into a training table,
bring an older one up to date."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from scoutless.cli import scale
from scoutless.cli.errors import UserError
from scoutless.cli.lazy import LazyConsole, get_settings, masked_url

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.table import Table
    from sqlalchemy import Engine

    from scoutless.allocation.values import ValueDistribution
    from scoutless.history.build import LatentTruth

app = typer.Typer(no_args_is_help=True)
console = LazyConsole()

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="SQLAlchemy URL; default: SQLite file in the work dir"),
]


def _db_url(db: str | None) -> str:
    return db or get_settings().resolved_db_url()


@app.command("generate")
def generate(
    tasks: Annotated[int, typer.Option("--tasks", min=1, help="number of tasks")] = 50_000,
    db: DbOption = None,
    seed: Annotated[int, typer.Option(help="random seed")] = 42,
    scenario: Annotated[
        str | None, typer.Option(help="'release_drift': a new release shifts needs")
    ] = None,
    drift_start: Annotated[
        datetime | None, typer.Option(help="when the drift scenario's release appears")
    ] = None,
    first_task_id: Annotated[int, typer.Option(help="jeditaskid of the first task")] = 1,
) -> None:
    """Generate a realistic synthetic PanDA history into a database."""
    from scoutless.history.panda_db import DatabaseUnavailable, make_engine
    from scoutless.history.synthetic import generate_history

    url = _db_url(db)
    engine = make_engine(url, schema=get_settings().db_schema)
    try:
        stats = generate_history(
            engine,
            tasks,
            seed=seed,
            scenario=scenario,
            drift_start=drift_start,
            first_task_id=first_task_id,
            within=get_settings().within_task,
            progress=True,
        )
    except DatabaseUnavailable as exc:
        raise UserError(f"{masked_url(url)}: {str(exc).splitlines()[0]}") from exc
    if stats.upgraded:
        console.print(f"[yellow]upgraded[/] the older history first ({stats.upgraded})")
    console.print(
        f"[green]generated[/] {stats.n_tasks:,} tasks, {stats.n_jobs:,} jobs in "
        f"{stats.seconds:.1f} s ({stats.rows_per_s:,.0f} job rows/s) → {masked_url(url)}"
    )


def synthetic_truth(engine: Engine, ids: list[int]) -> LatentTruth | None:
    """The generator's latent truth of ``ids`` when the history is synthetic, else None:
    the one place the build learns about the generator (for the Bayes-optimal classes)."""
    from scoutless.history.build import LatentTruth
    from scoutless.history.synthetic import bayes_probabilities, read_truth

    frame = read_truth(engine, ids=ids)
    return None if frame is None else LatentTruth(frame, bayes_probabilities)


def synthetic_values(url: str, ids: Sequence[int]) -> dict[str, ValueDistribution] | None:
    """The generator's true distribution of each task's value per target (``offset +
    exp(N(mu, sigma))``, rows in ``ids`` order; NaN for a task it has no row of), or None
    when the history is not synthetic: the replay's bayes strategy reads nothing else."""
    from scoutless.allocation.values import ValueDistribution
    from scoutless.history.panda_db import make_engine
    from scoutless.history.synthetic import read_truth
    from scoutless.targets.spec import TARGET_NAMES

    engine = make_engine(url, create_dirs=False, schema=get_settings().db_schema)
    try:
        frame = read_truth(engine, ids=[int(i) for i in ids])
    finally:
        engine.dispose()
    if frame is None:
        return None
    frame = frame.reindex([int(i) for i in ids])
    return {
        t: ValueDistribution.of(frame[f"{t}_offset"], frame[f"{t}_mu"], frame[f"{t}_sigma"])
        for t in TARGET_NAMES
        if f"{t}_mu" in frame.columns
    }


@app.command("build")
def build(
    out: Annotated[Path, typer.Option("--out", help="training table (.parquet)")],
    db: DbOption = None,
    bins: Annotated[Path | None, typer.Option("--bins", help="TOML overriding the bins")] = None,
    strict: Annotated[
        bool, typer.Option(help="fail on any bad row instead of excluding it")
    ] = False,
    since: Annotated[datetime | None, typer.Option(help="only tasks created since")] = None,
    scheduler: scale.SchedulerOption = None,
    export: Annotated[
        Path | None,
        typer.Option(help="with --scheduler: read a Parquet export of the tables, not --db"),
    ] = None,
    history: Annotated[
        bool,
        typer.Option(
            help="add per-user/transformation/campaign history features of earlier finished "
            "tasks (the service then reads them from the history store)"
        ),
    ] = False,
) -> None:
    """Build the training table (one row per task) from a PanDA-compatible history.

    With --scheduler the table is a folder of Parquet parts built on Dask (same rows)."""
    from scoutless.history.build import build_table_from_db
    from scoutless.history.panda_db import DatabaseUnavailable, make_engine

    url = _db_url(db)
    if export is not None and scheduler is None:
        raise typer.BadParameter("--export needs --scheduler (e.g. --scheduler local)")
    try:
        if scheduler is not None:
            table, report = scale.build(
                console, scheduler=scheduler, out=out, db_url=url, export=export, bins=bins,
                strict=strict, since=since, read_truth=synthetic_truth,
            )  # fmt: skip
            _report_build(table, report, out)
            return
        from rich.progress import Progress  # here: `data --help` stays light

        settings = get_settings()
        engine = make_engine(url, read_only=True, schema=settings.db_schema)  # a URL that is not one: said first
        with Progress(console=console, transient=True) as progress:
            bar = progress.add_task("reading history and computing targets", total=None)
            table, report = build_table_from_db(
                engine,
                bins,
                strict,
                since,
                settings=settings,
                on_chunk=lambda done, total: progress.update(bar, completed=done, total=total),
                with_history=history,
                read_truth=synthetic_truth,
            )
    except DatabaseUnavailable as exc:
        _refuse(url, exc)
    table.save(out)
    _report_build(table, report, out)


def _refuse(url: str, exc: Exception) -> NoReturn:
    """One line for a database that cannot be read (the file and the way out, no traceback)."""
    from scoutless.history.panda_db import DriverMissing, NotAHistory, OutdatedSchema

    message = str(exc).splitlines()[0]
    if not isinstance(exc, NotAHistory | OutdatedSchema | DriverMissing):
        message = f"{masked_url(url)}: {message}"  # the driver's words: say which database
    raise UserError(message) from exc


@app.command("upgrade")
def upgrade(db: DbOption = None) -> None:
    """Add the PanDA columns scoutless reads to a history that lacks them
    (in place; rows already there get PanDA's defaults or values from the row)."""
    from scoutless.history.panda_db import DatabaseUnavailable, make_engine, require_tables
    from scoutless.history.upgrade import describe, upgrade_history

    url = _db_url(db)
    try:
        schema = get_settings().db_schema
        engine = make_engine(url, read_only=True, schema=schema)  # refuses a missing file first
        require_tables(engine, ["jedi_tasks"])
        engine.dispose()
        added = upgrade_history(make_engine(url, create_dirs=False, schema=schema))
    except DatabaseUnavailable as exc:
        _refuse(url, exc)
    if added:
        console.print(f"[green]upgraded[/] {masked_url(url)}: {describe(added)}", soft_wrap=True)
    else:
        console.print(f"{masked_url(url)} is up to date: nothing to upgrade")


def _report_build(table, report, out: Path) -> None:  # type: ignore[no-untyped-def]
    if len(report):
        bad_path = report.save(out.with_suffix(".bad_rows.csv"))
        console.print(f"[yellow]{len(report)} bad rows excluded[/], listed in {bad_path}")
    console.print(summary_table(table, report))
    console.print(f"[green]wrote[/] {out}")


def summary_table(table, report) -> Table:  # type: ignore[no-untyped-def]
    """Per target: classes with their share of tasks, plus the scout estimate's accuracy."""
    from rich.table import Table

    from scoutless.targets.spec import class_col, scout_class_col

    frame = table.frame
    out = Table(title=f"training table: {len(frame):,} tasks ({table.source})")
    out.add_column("target")
    out.add_column("unit")
    out.add_column("classes (share of tasks)")
    out.add_column("scouts right", justify="right")
    for target, b in table.bins.items():
        classes = frame[class_col(target)]
        valid = classes >= 0
        shares = (
            classes[valid].value_counts(normalize=True).reindex(range(b.n_classes), fill_value=0)
        )
        text = "  ".join(f"{lab} {s:.0%}" for lab, s in zip(b.labels, shares, strict=True))
        scout = "-"
        if scout_class_col(target) in frame.columns:
            both = valid & (frame[scout_class_col(target)] >= 0)
            scout = f"{(frame.loc[both, scout_class_col(target)] == classes[both]).mean():.1%}"
        out.add_row(target, b.unit, text, scout)
    excluded = sum(report.counts().values()) if report is not None else 0
    out.caption = f"excluded rows: {excluded}"
    return out
