"""`scoutless import FORMAT FILE… --out table.parquet`: a real trace as a training table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from scoutless.cli.errors import UserError
from scoutless.cli.lazy import LazyConsole, get_settings
from scoutless.cli.sizing import WorkflowOption
from scoutless.sources.formats import FORMATS

if TYPE_CHECKING:
    from rich.table import Table

    from scoutless.history.table import TrainingTable

console = LazyConsole()


def _summary(table: TrainingTable, out: Path) -> Table:
    from rich.table import Table

    from scoutless.targets.spec import class_col

    frame = table.frame
    train, test = table.split("time")
    view = Table(
        title=f"{table.source} → {out} ({len(frame)} rows, {len(train)}/{len(test)} "
        "train/test by submit time)"
    )
    for col in ("target", "unit", "classes", "known", "edges", "baselines"):
        view.add_column(col)
    for t, b in table.bins.items():
        known = int((frame[class_col(t)] >= 0).sum())
        baselines = [n for n in ("user_request", "last2", "scout") if f"{t}_{n}_class" in frame]
        view.add_row(
            t, b.unit, str(b.n_classes), str(known),
            ", ".join(f"{e:.4g}" for e in b.edges[1:-1]), ", ".join(baselines) or "—",
        )  # fmt: skip
    return view


def _update_store(history_db: str, jobs: Any, table: TrainingTable, cfg: Any) -> None:
    from scoutless.features.history import history_keys
    from scoutless.history.panda_db import make_engine
    from scoutless.history.store import update_store

    columns = list(jobs.frame.columns)
    n_keys = update_store(
        make_engine(history_db, schema=get_settings().db_schema),
        jobs.frame,
        history_keys(columns),
        list(table.bins),
        cfg,
    )
    console.print(f"history store: {n_keys} key rows updated")


def _require(files: list[Path]) -> None:
    for f in files:
        if not f.exists():
            raise UserError(f"{f}: no such file")


def import_trace(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help=" | ".join([*FORMATS, "nextflow"]))],
    files: Annotated[list[Path], typer.Argument(metavar="FILE...", help="trace file(s); gzip ok")],
    out: Annotated[Path, typer.Option("--out", "-o", help="training table to write")] = Path(
        "table.parquet"
    ),
    skip_bad: Annotated[
        bool, typer.Option("--skip-bad", help="skip malformed lines (default: stop at the first)")
    ] = False,
    mapping: Annotated[
        Path | None, typer.Option(help="TOML column mapping (table; sacct without header)")
    ] = None,
    quantiles: Annotated[
        int | None, typer.Option(min=2, help="classes per target (default 4/4/2/5)")
    ] = None,
    history: Annotated[
        bool, typer.Option(help="add the user's recent finished jobs as features")
    ] = True,
    workflow: WorkflowOption = None,
    history_db: Annotated[
        str | None,
        typer.Option(
            help="SQLAlchemy URL of the history-feature store to update with the trace's "
            "jobs (what the service reads at submission)"
        ),
    ] = None,
) -> None:
    """Import a job trace (SWF, PanDA job CSV, Slurm sacct, HTCondor, Nextflow, any table)."""
    if fmt == "nextflow":
        from scoutless.cli.sizing import import_nextflow

        return import_nextflow(files, workflow, out, skip_bad)
    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    _require(files)
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from scoutless.sources.assemble import to_training_table
    from scoutless.sources.common import TraceParseError
    from scoutless.sources.load import load_trace

    columns = [SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn()]
    settings = get_settings()
    try:
        with Progress(*columns, console=console, transient=True) as progress:
            step = progress.add_task(f"reading {len(files)} {fmt} file(s)")
            jobs = load_trace(fmt, files, settings=settings, skip_bad=skip_bad, mapping=mapping)
            progress.update(step, description="baselines, bins, splits")
            table = to_training_table(jobs, settings=settings, n_quantiles=quantiles,
                                      history_features=history)  # fmt: skip
            progress.update(step, description=f"writing {out}")
            table.save(out)
            if history_db:
                progress.update(step, description="updating the history store")
                _update_store(history_db, jobs, table, settings.history)
    except (TraceParseError, ValueError) as exc:
        from scoutless.cli.errors import trace_error

        raise trace_error(exc, skip_bad) from exc
    _report(jobs.bad_lines, _summary(table, out), jobs.info.get("values_out_of_range"))


def _report(bad_lines: list, summary: Table, out_of_range: dict[str, int] | None = None) -> None:
    for err in bad_lines[:10]:
        console.print(f"[yellow]skipped {err}")
    if len(bad_lines) > 10:
        console.print(f"[yellow]… {len(bad_lines) - 10} more malformed lines skipped")
    if out_of_range:
        counts = ", ".join(f"{name} {n}" for name, n in sorted(out_of_range.items()))
        console.print(f"[yellow]values past a float's range read as not measured: {counts}")
    console.print(summary)
