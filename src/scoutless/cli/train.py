"""``scoutless train``: a training table in, a model bundle out, validation metrics printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from scoutless.cli import scale
from scoutless.cli.errors import UserError
from scoutless.cli.lazy import LazyConsole, get_settings, masked_url
from scoutless.models.families import FAMILY_NAMES

if TYPE_CHECKING:
    from rich.table import Table

console = LazyConsole()


def _grid(text: str | None) -> dict[str, list] | None:
    """The XGBoost grid from inline JSON or a JSON file."""
    if text is None:
        return None
    raw = Path(text).read_text() if Path(text).is_file() else text
    try:
        grid = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"--xgb-grid {text!r}: not JSON ({exc})") from exc
    if not isinstance(grid, dict) or not all(isinstance(v, list) for v in grid.values()):
        raise typer.BadParameter(f'--xgb-grid {text!r}: expected {{"param": [values, ...]}}')
    return grid


def _variants(text: str | None) -> list[str]:
    """The DNN variant names, each checked against the known ones (None: the default set)."""
    from scoutless.models.tuning import DEFAULT_DNN_VARIANTS, DNN_VARIANTS

    if text is None:
        return list(DEFAULT_DNN_VARIANTS)
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [v for v in names if v not in DNN_VARIANTS]
    if unknown or not names:
        raise typer.BadParameter(
            f"--dnn-variants {text!r}: unknown {unknown or names}; choose from {list(DNN_VARIANTS)}"
        )
    return names


def metrics_table(manifest: dict) -> Table:
    """Validation accuracy / macro-F1 per target and model, champion marked."""
    from rich.table import Table

    table = Table(title=f"bundle {manifest['version']}: validation metrics")
    for col in ("target", "model", "accuracy", "macro-F1", "train s", ""):
        table.add_column(
            col, justify="right" if col in ("accuracy", "macro-F1", "train s") else "left"
        )
    seconds = manifest.get("training", {}).get("train_seconds", {})
    for target, by_model in manifest["validation_metrics"].items():
        for name, m in by_model.items():
            champion = manifest["champion"][target] == name
            table.add_row(
                target,
                name,
                f"{m['accuracy']:.3f}",
                f"{m['macro_f1']:.3f}",
                f"{seconds.get(target, {}).get(name, float('nan')):.1f}",
                "[green]champion[/]" if champion else "",
            )
    return table


def carry_bundle_history(
    table: Any, bundle: Path, db: str | None, split: str | None, seed: int, settings: Any
) -> None:
    """The jobs' spread and room loads of the table's training tasks, from the history's
    jobs (``replay.history.carry_history``); a history that cannot be read leaves the
    bundle without them (its decision then prices every job at its task's value and the
    rooms at load 0), said in one line."""
    from sqlalchemy.exc import SQLAlchemyError

    from scoutless.config.settings import BadDatabaseUrl
    from scoutless.history.panda_db import DatabaseUnavailable
    from scoutless.replay.history import carry_history
    from scoutless.replay.workload import WorkloadError

    train, _ = table.split(split or table.default_split)
    if "jeditaskid" not in train:
        console.print("[yellow]no jobs' spread or room loads in the bundle[/] (the table "
                      "names no tasks); it decides at room load 0")  # fmt: skip
        return
    url = db or settings.resolved_db_url()
    try:
        carry_history(url, settings, train["jeditaskid"].to_numpy(), bundle, seed=seed)
    except (BadDatabaseUrl, DatabaseUnavailable, WorkloadError, OSError, SQLAlchemyError) as exc:
        console.print(
            f"[yellow]no jobs' spread or room loads in the bundle[/] (the history "
            f"{masked_url(url)} cannot be read: {exc}); it decides at room load 0"
        )


XgbGridOption = Annotated[
    str | None,
    typer.Option(
        help="XGBoost k-fold grid (runs even without --trials), JSON or a JSON file: "
        '{"max_depth": [4, 6]}'
    ),
]
DnnVariantsOption = Annotated[
    str | None,
    typer.Option(
        help="DNN variants tried per target, the best on validation kept (reference, "
        "ordinal, ordinal_tempered, ple, onecycle); default: reference,ordinal,ordinal_tempered"
    ),
]


#: the history a table was built from: the bundle learns its jobs' spread and room loads
HistoryDbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="the history the table was built from (SQLAlchemy URL; default: the work "
        "dir's SQLite file): the bundle learns its training tasks' jobs' spread and room "
        "loads from it",
    ),
]


def train(
    table: Annotated[Path, typer.Option("--table", help="training table (.parquet)")],
    out: Annotated[Path, typer.Option("--out", help="bundle folder to write")],
    models: Annotated[
        str, typer.Option(help=f"comma-separated families: {', '.join(FAMILY_NAMES)}")
    ] = ",".join(FAMILY_NAMES),
    trials: Annotated[
        int, typer.Option(min=0, help="DNN random-search trials; > 0 also runs the XGBoost grid")
    ] = 0,
    seed: Annotated[int, typer.Option(help="seed of the parts, the models and the search")] = 42,
    split: Annotated[
        str | None,
        typer.Option(help="'random' or 'time': whose train rows to use (default: the table's)"),
    ] = None,
    max_epochs: Annotated[int | None, typer.Option(min=1, help="cap on DNN epochs")] = None,
    xgb_grid: XgbGridOption = None,
    threads: Annotated[int | None, typer.Option(min=1, help="CPU threads for training")] = None,
    dnn_variants: DnnVariantsOption = None,
    scheduler: scale.SchedulerOption = None,
    db: HistoryDbOption = None,
) -> None:
    """Train XGBoost baselines and the DNN per target; write a versioned bundle."""
    from scoutless.history.table import TableError, TrainingTable
    from scoutless.training import TrainingError, check_model_names, train_bundle

    if split not in (None, "random", "time"):
        raise typer.BadParameter(f"--split {split!r}: expected 'random' or 'time'")
    variants = _variants(dnn_variants)
    settings = get_settings()  # read once: the training and the bundle's history alike
    try:
        names = check_model_names(models.split(","))
        training_table = TrainingTable.load(table)
        with scale.fitter(scheduler, console) as fit_model:
            path = train_bundle(
                training_table,
                out,
                models=names,
                trials=trials,
                seed=seed,
                split=split or training_table.default_split,
                progress=True,
                max_epochs=max_epochs,
                xgb_grid=_grid(xgb_grid),
                n_jobs=threads,
                dnn_variants=variants,
                fit_model=fit_model,
                settings=settings,
            )
    except (FileNotFoundError, TableError, TrainingError) as exc:
        raise UserError(str(exc)) from exc
    carry_bundle_history(training_table, path, db, split, seed, settings)
    manifest = json.loads((path / "manifest.json").read_text())
    console.print(metrics_table(manifest))
    console.print(f"[green]bundle[/] {manifest['version']} → {path}")
