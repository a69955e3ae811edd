"""`scoutless evaluate`: score a bundle on a table's test rows; metrics.json + report.html."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from scoutless.bundle import BundleError, load_bundle
from scoutless.evaluation.evaluate import (
    METRICS_FILE,
    REPORT_FILE,
    EvaluationError,
    evaluate_bundle,
)
from scoutless.evaluation.tables import headline_table, models_table, pipeline_table, policies_table
from scoutless.history.table import TableError, TrainingTable
from scoutless.ops.registry import RegistryError


def evaluate(
    bundle: Annotated[Path, typer.Option(help="Bundle folder, or a registry (its champion).")],
    table: Annotated[Path, typer.Option(help="Training table (.parquet) with split columns.")],
    out: Annotated[Path, typer.Option(help="Folder for metrics.json and report.html.")],
    split: Annotated[
        str | None,
        typer.Option(help="Which stored split's test rows: random or time (default: the table's)."),
    ] = None,
    alpha: Annotated[
        float, typer.Option(help="Risk policy: allowed under-allocation rate.")
    ] = 0.05,
    recall: Annotated[
        float,
        typer.Option(
            help="Safe policy: share of large tasks (upper half of the classes) allocated enough."
        ),
    ] = 0.9,
    details: Annotated[bool, typer.Option(help="Also print every model per target.")] = False,
) -> None:
    """Evaluate every model of a bundle against the baselines and write an HTML report."""
    console = Console()
    if split not in (None, "random", "time"):
        console.print(f"[red]--split {split!r}: expected 'random' or 'time'[/red]")
        raise typer.Exit(code=2)
    try:
        predictor = load_bundle(bundle)
        training_table = TrainingTable.load(table)
        metrics = evaluate_bundle(
            predictor,
            training_table,
            out,
            split=split or training_table.default_split,
            alpha=alpha,
            recall=recall,
        )
    except (BundleError, RegistryError, TableError, EvaluationError, FileNotFoundError) as exc:
        console.print(f"[red]evaluate: {exc}[/red]")
        raise typer.Exit(code=1) from exc
    for warning in metrics.get("warnings", []):
        console.print(f"[yellow]warning: {warning}[/yellow]")
    console.print(headline_table(metrics))
    if details:
        for target in metrics["targets"]:
            console.print(models_table(metrics, target))
    console.print(policies_table(metrics))
    console.print(pipeline_table(metrics))
    console.print(f"wrote {out / METRICS_FILE} and {out / REPORT_FILE}")
