"""``scoutless replay``: the same history through every strategy (scouts, predicted, hybrid,
selective, bayes, oracle), or an imported trace through request, predicted, selective and
oracle (docs/how-to/replay.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

if TYPE_CHECKING:
    from rich.status import Status

    from scoutless.config import Settings

console = Console()


def _test_task_ids(table: Path) -> object:
    """jeditaskids of a training table's test rows: tasks the bundle never trained on."""
    from scoutless.history.table import TrainingTable

    training = TrainingTable.load(table)
    _, test = training.split(training.default_split)
    return test["jeditaskid"].to_numpy()


def replay(
    out: Annotated[Path, typer.Option(help="Folder for replay.json.")],
    db: Annotated[
        str | None, typer.Option(help="SQLAlchemy URL of the PanDA-compatible history.")
    ] = None,
    trace: Annotated[
        Path | None, typer.Option(help="An imported trace table instead (its test rows).")
    ] = None,
    bundle: Annotated[
        Path | None, typer.Option(help="Bundle (or registry) for predicted/hybrid/selective.")
    ] = None,
    strategies: Annotated[
        str | None, typer.Option(help="Comma-separated subset of replay.strategies (all six).")
    ] = None,
    policy: Annotated[
        str | None, typer.Option(help="cost (default), value, or a class policy: risk/safe/argmax.")
    ] = None,
    alpha: Annotated[
        float | None, typer.Option(help="value/risk: allowed under-allocation (allocation.alpha).")
    ] = None,
    tasks: Annotated[
        int | None, typer.Option(min=1, help="Replay a seeded sample of N tasks.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the task sample.")] = 42,
    config: Annotated[
        Path | None, typer.Option(help="TOML overriding replay settings (\\[replay] or top level).")
    ] = None,
    table: Annotated[
        Path | None, typer.Option(help="Replay only this training table's test tasks.")
    ] = None,
) -> None:
    """Replay the history on a simulated clock; write replay.json and print the comparison."""
    from scoutless.bundle import BundleError, load_bundle
    from scoutless.history.panda_db import DatabaseUnavailable
    from scoutless.history.table import TableError
    from scoutless.replay.config import ReplayConfigError
    from scoutless.replay.pool import PoolError
    from scoutless.replay.runner import REPLAY_JSON
    from scoutless.replay.tables import headline_line, replay_table
    from scoutless.replay.workload import WorkloadError

    try:
        if (db is None) == (trace is None):
            raise ReplayConfigError("give one of --db (a PanDA history) or --trace (a table)")
        settings = _settings(policy, strategies, config)
        _check_bundle(settings, bundle is not None or trace is not None)
        predictor = load_bundle(bundle) if bundle is not None else None
        only = _test_task_ids(table) if table is not None else None
        document = _run(db, trace, predictor, out, settings, policy, alpha, tasks, seed, only)
    except (
        ReplayConfigError, WorkloadError, PoolError, BundleError, TableError,
        DatabaseUnavailable, FileNotFoundError, ValueError,
    ) as exc:  # fmt: skip
        console.print(f"[red]replay: {exc}[/red]")
        raise typer.Exit(code=1) from exc
    console.print(replay_table(document))
    console.print(headline_line(document))
    console.print(f"wrote {out / REPLAY_JSON}")


def _check_bundle(settings: Settings, has_bundle: bool) -> None:
    """A history replay of the model's strategies needs a bundle (a trace runs without)."""
    from scoutless.replay.config import ReplayConfigError
    from scoutless.replay.strategies import SOURCE_OF

    modelled = [s for s in settings.replay.strategies if SOURCE_OF.get(s) == "model"]
    if modelled and not has_bundle:
        raise ReplayConfigError(f"strategies {'/'.join(modelled)} need --bundle")


def _settings(policy: str | None, strategies: str | None, config: Path | None) -> Settings:
    """The settings with the replay's file and options applied; errors name the key."""
    from scoutless.config import REPLAY_POLICIES, get_settings
    from scoutless.replay.config import ReplayConfigError, replay_settings

    if policy is not None and policy not in REPLAY_POLICIES:
        raise ReplayConfigError(
            f"--policy {policy!r}: expected one of {', '.join(REPLAY_POLICIES)}"
        )
    names = [s.strip() for s in strategies.split(",") if s.strip()] if strategies else None
    settings = get_settings()
    cfg = replay_settings(settings.replay, config, strategies=names, policy=policy)
    return settings.model_copy(update={"replay": cfg})


def _run(
    db: str | None,
    trace: Path | None,
    predictor: object,
    out: Path,
    settings: object,
    policy: str | None,
    alpha: float | None,
    n_tasks: int | None,
    seed: int,
    only: object,
) -> dict:
    """The replay of a history database or of an imported trace, with a status line."""
    from scoutless.cli.data import synthetic_values
    from scoutless.replay.runner import replay_history, replay_trace

    with console.status("replaying") as status:
        step = lambda text: _step(status, text)  # noqa: E731
        if trace is not None:
            return replay_trace(
                trace, predictor, out, settings, policy=policy, alpha=alpha, on_step=step
            )
        return replay_history(
            db, predictor, out, settings, policy=policy, alpha=alpha, n_tasks=n_tasks,
            seed=seed, only=only, read_truth=synthetic_values, on_step=step,
        )  # fmt: skip


def _step(status: Status, text: str) -> None:
    status.update(text)
    console.log(text)
