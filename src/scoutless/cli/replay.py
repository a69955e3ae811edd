"""``scoutless replay``: the same history through every strategy (scouts, predicted, hybrid,
selective, bayes, oracle; a ``canary`` on request), or an imported trace through request,
predicted, selective, online (the online sizer) and oracle (docs/how-to/replay.md);
``--write-history`` writes the replayed canary as PanDA's records for ``monitor impact``
(docs/how-to/rollout.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from scoutless.cli.errors import UserError
from scoutless.cli.lazy import LazyConsole
from scoutless.cli.output import FormatOption, checked, give, notes

if TYPE_CHECKING:
    from rich.status import Status

    from scoutless.config import Settings

console = LazyConsole()
ShareOpt = Annotated[
    float | None, typer.Option(help="canary: share of the eligible tasks that skip scouts (0.5).")
]
ArmOpt = Annotated[
    str | None,
    typer.Option(help="canary: what a drawn task runs: selective (default), hybrid, online, control."),
]
WriteHistoryOpt = Annotated[
    str | None,
    typer.Option(help="Write the replayed canary as PanDA's records to this new database."),
]


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
        Path | None,
        typer.Option(exists=True, help="Bundle (or registry) for predicted/hybrid/selective."),
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
    canary_share: ShareOpt = None,
    canary_arm: ArmOpt = None,
    write_history: WriteHistoryOpt = None,
    fmt: FormatOption = "table",
) -> None:
    """Replay the history on a simulated clock; write replay.json and print the comparison."""
    from scoutless.bundle import load_bundle
    from scoutless.replay.config import ReplayConfigError
    from scoutless.replay.runner import REPLAY_JSON

    said = notes(checked(fmt), console)
    try:
        if (db is None) == (trace is None):
            raise ReplayConfigError("give one of --db (a PanDA history) or --trace (a table)")
        if write_history is not None and db is None:
            raise ReplayConfigError("--write-history writes a history replay's canary: give --db")
        settings = _settings(policy, strategies, config, canary_share, canary_arm)
        _check_bundle(settings, bundle is not None or trace is not None)
        predictor = load_bundle(bundle) if bundle is not None else None
        only = _test_task_ids(table) if table is not None else None
        rehearse = _writer(db, write_history, settings, predictor, said)
        document = _run(
            db, trace, predictor, out, settings, policy, alpha, tasks, seed, only, rehearse, said
        )
    except _reported() as exc:
        raise UserError(f"replay: {exc}") from exc
    _give(fmt, document, said)
    said.print(f"wrote {out / REPLAY_JSON}")


def _give(fmt: str, document: dict, said: Any) -> None:
    """The strategies side by side, or their figures as JSON (the document) or CSV."""
    import pandas as pd

    from scoutless.replay.tables import headline_line, replay_rows, replay_table

    def draw() -> None:
        console.print(replay_table(document))

    give(fmt, draw, {"strategies": pd.DataFrame(replay_rows(document))}, document=document)
    said.print(headline_line(document))


def _reported() -> tuple[type[BaseException], ...]:
    """What ``replay`` reports in one red line (exit 1) instead of a traceback."""
    from scoutless.bundle import BundleError
    from scoutless.history.panda_db import DatabaseUnavailable
    from scoutless.history.table import TableError
    from scoutless.replay.config import ReplayConfigError
    from scoutless.replay.pool import PoolError
    from scoutless.replay.workload import WorkloadError

    return (ReplayConfigError, WorkloadError, PoolError, BundleError, TableError,
            DatabaseUnavailable, FileNotFoundError, ValueError)  # fmt: skip


def _check_bundle(settings: Settings, has_bundle: bool) -> None:
    """A history replay of the model's strategies needs a bundle (a trace runs without)."""
    from scoutless.replay.config import ReplayConfigError
    from scoutless.replay.strategies import SOURCE_OF

    modelled = [s for s in settings.replay.strategies if SOURCE_OF.get(s) == "model"]
    if modelled and not has_bundle:
        raise ReplayConfigError(f"strategies {'/'.join(modelled)} need --bundle")


def _writer(
    db: str | None, url: str | None, settings: Settings, predictor: object, said: Any
) -> object:
    """The callback writing the replayed canary into ``url`` (None without one)."""
    if db is None or url is None:
        return None
    from scoutless.config import masked_url
    from scoutless.ops.rehearsal import write_rehearsal

    def write(rehearsal: object) -> None:
        bins = getattr(predictor, "bins", None)
        done = write_rehearsal(rehearsal, db, url, settings, bins=bins)  # type: ignore[arg-type]
        said.print(f"wrote {done.tasks:,} tasks, {done.jobs:,} job attempts and "
                   f"{done.predictions:,} predictions to {masked_url(url)}; {done.rollout}")  # fmt: skip
        said.print(f"read it: scoutless monitor impact --db {masked_url(url)} "
                   f"--days {done.span_days} --html impact.html")  # fmt: skip

    return write


def _settings(
    policy: str | None, strategies: str | None, config: Path | None,
    share: float | None = None, arm: str | None = None,
) -> Settings:  # fmt: skip
    """The settings with the replay's file and options applied; errors name the key."""
    from scoutless.config import REPLAY_POLICIES, get_settings
    from scoutless.replay.config import ReplayConfigError, replay_settings

    if policy is not None and policy not in REPLAY_POLICIES:
        raise ReplayConfigError(
            f"--policy {policy!r}: expected one of {', '.join(REPLAY_POLICIES)}"
        )
    names = [s.strip() for s in strategies.split(",") if s.strip()] if strategies else None
    settings = get_settings()
    cfg = replay_settings(
        settings.replay, config, strategies=names, policy=policy, canary_share=share,
        canary_arm=arm,
    )  # fmt: skip
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
    rehearse: object = None,
    said: Any = console,
) -> dict:
    """The replay of a history database or of an imported trace, with a status line."""
    from scoutless.cli.data import synthetic_values
    from scoutless.replay.runner import replay_history, replay_trace

    with said.status("replaying") as status:
        step = lambda text: _step(status, text, said)  # noqa: E731
        if trace is not None:
            return replay_trace(
                trace, predictor, out, settings, policy=policy, alpha=alpha, on_step=step
            )
        return replay_history(
            db, predictor, out, settings, policy=policy, alpha=alpha, n_tasks=n_tasks,
            seed=seed, only=only, read_truth=synthetic_values, on_step=step, rehearse=rehearse,
        )  # fmt: skip


def _step(status: Status, text: str, said: Any) -> None:
    status.update(text)
    said.log(text)
