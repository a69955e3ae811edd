"""``scoutless demo``: the whole story on the embedded default, end to end.

generate a history (SQLite) → build the training table → train every model family →
evaluate against the baselines → replay the test tasks through every strategy (scouts,
predicted, hybrid, selective, bayes, oracle; docs/how-to/replay.md) → metrics.json, replay.json, report.html and a servable bundle.
Each artefact is written to a temporary name and renamed when complete (the history, the
table, the bundle, metrics.json, replay.json and report.html), so an interrupted
demo leaves the previous run's files intact.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from scoutless.cli.lazy import LazyConsole, get_settings
from scoutless.models.families import FAMILY_NAMES

console = LazyConsole()
STEPS = 5


def _step(n: int, total: int, text: str) -> None:
    console.rule(f"[bold]{n}/{total}[/] {text}")


def _generate_history(db_path: Path, tasks: int, seed: int, within: Any) -> Any:
    """Generate into a temporary SQLite file and rename it into place when complete."""
    from scoutless.history.panda_db import make_engine
    from scoutless.history.synthetic import generate_history

    tmp_db = db_path.parent / f".history.{os.getpid()}.sqlite"
    try:
        engine = make_engine(f"sqlite:///{tmp_db.resolve()}")
        stats = generate_history(
            engine, tasks, seed=seed, within=within, progress=True
        )
        engine.dispose()  # checkpoints the WAL into the file
        for stale in (Path(f"{db_path}-wal"), Path(f"{db_path}-shm")):
            stale.unlink(missing_ok=True)  # a crashed run's WAL must not meet the new file
        os.replace(tmp_db, db_path)
    finally:
        for leftover in (tmp_db, Path(f"{tmp_db}-wal"), Path(f"{tmp_db}-shm")):
            leftover.unlink(missing_ok=True)
    return stats


def demo(
    workdir: Annotated[Path, typer.Option("--workdir", help="where everything is written")] = Path(
        "scoutless-work"
    ),
    tasks: Annotated[int, typer.Option("--tasks", min=200, help="synthetic tasks")] = 50_000,
    seed: Annotated[int, typer.Option(help="random seed")] = 42,
    models: Annotated[str, typer.Option(help="model families to train")] = ",".join(FAMILY_NAMES),
    max_epochs: Annotated[int | None, typer.Option(help="cap on DNN epochs")] = None,
) -> None:
    """Generate → build → train → evaluate → replay on the embedded SQLite default.

    Writes the history, the table, a bundle, metrics.json, replay.json and report.html."""
    from scoutless.bundle import load_bundle
    from scoutless.cli.data import summary_table, synthetic_truth
    from scoutless.evaluation.evaluate import evaluate_bundle
    from scoutless.evaluation.tables import allocation_table, headline_table
    from scoutless.history.build import build_table_from_db
    from scoutless.history.panda_db import make_engine
    from scoutless.training import train_bundle

    started = time.perf_counter()
    settings = get_settings()
    workdir.mkdir(parents=True, exist_ok=True)
    db_path = workdir / "history.sqlite"
    table_path = workdir / "table.parquet"
    bundle_path = workdir / "bundle"

    _step(1, STEPS, f"generate {tasks:,} synthetic PanDA tasks → {db_path}")
    stats = _generate_history(db_path, tasks, seed, settings.within_task)
    console.print(f"{stats.n_tasks:,} tasks, {stats.n_jobs:,} jobs in {stats.seconds:.0f} s")

    _step(2, STEPS, f"build the training table → {table_path}")
    engine = make_engine(f"sqlite:///{db_path.resolve()}", create_dirs=False)
    table, report = build_table_from_db(engine, settings=settings, read_truth=synthetic_truth)
    table.save(table_path)
    if len(report):
        bad = report.save(workdir / "bad_rows.csv")
        console.print(f"{len(report):,} unusable jobs and tasks left out, each with its reason: {bad}")
    console.print(summary_table(table, report))

    _step(3, STEPS, f"train {models} → {bundle_path}")
    train_bundle(
        table, bundle_path, models=tuple(m.strip() for m in models.split(",") if m.strip()),
        trials=0, seed=seed, max_epochs=max_epochs, settings=settings,
    )  # fmt: skip
    _carry_history(db_path, table, bundle_path, seed, settings)
    _step(4, STEPS, f"evaluate against the baselines → {workdir}")
    predictor = load_bundle(bundle_path)
    # report.html is drawn once, in step 5, with the replay section in it
    metrics = evaluate_bundle(predictor, table, workdir, progress=True, report=False)
    console.print(headline_table(metrics))
    allocations = allocation_table(metrics)
    if allocations is not None:
        console.print(allocations)

    _replay(db_path, predictor, table, metrics, workdir, seed, settings)
    _done(workdir, bundle_path, db_path, (time.perf_counter() - started) / 60)


def _carry_history(db_path: Path, table: Any, bundle_path: Path, seed: int, settings: Any) -> None:
    """The bundle carries what its decision learns from its training tasks' jobs (the
    jobs' spread, the room loads), as `scoutless train --db` has it do."""
    from scoutless.cli.train import carry_bundle_history

    url = f"sqlite:///{db_path.resolve()}"
    carry_bundle_history(table, bundle_path, url, None, seed, settings)


def _done(workdir: Path, bundle_path: Path, db_path: Path, minutes: float) -> None:
    """Where everything is, and how to serve it."""
    from rich.panel import Panel

    console.print(
        Panel.fit(
            f"report:  {(workdir / 'report.html').resolve()}\n"
            f"metrics: {(workdir / 'metrics.json').resolve()}\n"
            f"replay:  {(workdir / 'replay.json').resolve()}\n"
            f"bundle:  {bundle_path.resolve()}\n\n"
            f"serve it:  scoutless serve --bundle {bundle_path} --db sqlite:///{db_path}\n"
            f"ask it:    curl localhost:8000/v1/tasks/<jeditaskid>/prediction",
            title=f"demo done in {minutes:.1f} min",
        )
    )


def _replay(
    db_path: Path, predictor: Any, table: Any, metrics: dict, workdir: Path, seed: int,
    settings: Any,
) -> None:  # fmt: skip
    """Step 5: replay.json of the table's test tasks (the bundle never trained on them),
    printed, and the report rewritten with its replay section."""
    from scoutless.cli.data import synthetic_values
    from scoutless.evaluation.report import write_report
    from scoutless.replay.report import replay_section
    from scoutless.replay.runner import replay_history
    from scoutless.replay.tables import headline_line, replay_table

    _step(5, STEPS, f"replay the test tasks through every strategy → {workdir}")
    _, test = table.split(table.default_split)
    with console.status("replaying") as status:
        document = replay_history(
            f"sqlite:///{db_path.resolve()}", predictor, workdir, settings,
            seed=seed, only=test["jeditaskid"].to_numpy(), read_truth=synthetic_values,
            on_step=status.update,
        )  # fmt: skip
    console.print(replay_table(document))
    console.print(headline_line(document))
    write_report(metrics, workdir / "report.html", replay_section(document))
