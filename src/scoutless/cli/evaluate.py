"""`scoutless evaluate`: score a bundle on a table's test rows; metrics.json + report.html."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from scoutless.cli.errors import UserError
from scoutless.cli.lazy import LazyConsole, get_settings

WalkForwardOpt = Annotated[
    str | None,
    typer.Option(
        "--walk-forward",
        help="Retrain every PERIOD (30d, 12h …) on everything finished before it and "
        "predict the next period, from the time split's boundary on.",
    ),
]
ModelsOpt = Annotated[
    str, typer.Option(help="--walk-forward: model families to train, comma-separated.")
]
MaxPeriodsOpt = Annotated[int | None, typer.Option(help="--walk-forward: only the last N periods.")]
MaxTrainOpt = Annotated[
    int | None, typer.Option(help="--walk-forward: at most the N most recent training rows.")
]
RetrainOpt = Annotated[
    str,
    typer.Option(help="--walk-forward: retrain this often within each period, as a deployment "
                 "retraining weekly would (the same rows are scored); 'none': one bundle per "
                 "period."),
]  # fmt: skip


def evaluate(
    table: Annotated[Path, typer.Option(help="Training table (.parquet) with split columns.")],
    out: Annotated[Path, typer.Option(help="Folder for metrics.json and report.html.")],
    bundle: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            help="Bundle folder, or a registry (its champion); not with --walk-forward.",
        ),
    ] = None,
    walk_forward: WalkForwardOpt = None,
    models: ModelsOpt = "xgb,dnn",
    max_periods: MaxPeriodsOpt = None,
    max_train: MaxTrainOpt = None,
    retrain_every: RetrainOpt = "7d",
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
    if walk_forward is not None:
        _walk_forward(table, out, walk_forward, models, max_periods, max_train, retrain_every)
        return
    if bundle is None:
        raise UserError("evaluate: --bundle is required (or use --walk-forward PERIOD)")
    if split not in (None, "random", "time"):
        raise UserError(f"--split {split!r}: expected 'random' or 'time'")
    _score(bundle, table, out, split, alpha, recall, details)


def _score(
    bundle: Path, table: Path, out: Path, split: str | None, alpha: float, recall: float,
    details: bool,
) -> None:  # fmt: skip
    """The evaluation proper; its imports are here so that ``evaluate --help`` stays light."""
    from scoutless.bundle import BundleError, load_bundle
    from scoutless.evaluation.evaluate import (
        METRICS_FILE,
        REPORT_FILE,
        EvaluationError,
        evaluate_bundle,
    )
    from scoutless.evaluation.tables import (
        allocation_table,
        headline_table,
        models_table,
        pipeline_table,
        policies_table,
    )
    from scoutless.history.table import TableError, TrainingTable
    from scoutless.ops.registry import RegistryError

    console = LazyConsole()
    try:
        predictor = load_bundle(bundle)
        training_table = TrainingTable.load(table)
        split = split or training_table.default_split
        metrics = evaluate_bundle(predictor, training_table, out, split=split, alpha=alpha,
                                  recall=recall)  # fmt: skip
    except (BundleError, RegistryError, TableError, EvaluationError, FileNotFoundError) as exc:
        raise UserError(f"evaluate: {exc}") from exc
    for warning in metrics.get("warnings", []):
        console.print(f"[yellow]warning: {warning}[/yellow]")
    console.print(headline_table(metrics))
    if details:
        for target in metrics["targets"]:
            console.print(models_table(metrics, target))
    console.print(policies_table(metrics))
    allocations = allocation_table(metrics)
    if allocations is not None:
        console.print(allocations)
    console.print(pipeline_table(metrics))
    console.print(f"wrote {out / METRICS_FILE} and {out / REPORT_FILE}")


def _walk_forward(
    table: Path,
    out: Path,
    period: str,
    models: str,
    max_periods: int | None,
    max_train: int | None,
    retrain_every: str | None = None,
) -> None:
    """``--walk-forward``: per-period and pooled tables, ``walk_forward.json`` in ``out``."""
    # here, not at the top: `evaluate --help` imports none of this (cli/main.py)
    from scoutless.evaluation.tables import walk_forward_tables
    from scoutless.history.table import TableError, TrainingTable
    from scoutless.training import TrainingError, check_model_names
    from scoutless.training.walk_forward import WalkForwardError, write_walk_forward
    from scoutless.training.walk_forward import walk_forward as run_walk_forward

    console = LazyConsole()
    try:
        names = check_model_names(models.split(","))
        training_table = TrainingTable.load(table)
        from rich.progress import Progress  # here: `evaluate --help` stays light

        with Progress(*Progress.get_default_columns(), console=console) as bar:
            task = bar.add_task("walk-forward", total=None)

            def on_period(i: int, n: int, label: str) -> None:
                bar.update(task, total=n, completed=i, description=f"period {label}")

            result = run_walk_forward(
                training_table, period, settings=get_settings(), models=names,
                max_periods=max_periods,
                max_train=max_train, on_period=on_period, retrain_every=retrain_every,
            )  # fmt: skip
            bar.update(task, completed=len(result["periods"]))
    except (TableError, WalkForwardError, TrainingError, FileNotFoundError) as exc:
        raise UserError(f"evaluate --walk-forward: {exc}") from exc
    for view in walk_forward_tables(result):
        console.print(view)
    path = write_walk_forward(result, out)
    console.print(f"wrote {path}")
