"""The ``scoutless`` command: one sub-command group per verb, assembled here only.

Verbs are imported when they run, not when the command starts: ``scoutless --help`` lists
them from ``VERBS`` below without importing any (torch, scikit-learn, pandas … stay
unloaded), and ``scoutless VERB --help`` imports that verb's module only.

To add a verb: write it in ``cli/NAME.py`` (a function, or a ``typer.Typer`` for a group
of sub-commands), keep that module's top-level imports light (typer; a
``scoutless.cli.lazy.LazyConsole`` for rich, whose tables are imported where drawn; the
settings through ``scoutless.cli.lazy.get_settings``, which imports ``config`` and pydantic
when called; the heavy parts inside the function that runs), and add one line to ``VERBS``:
``"name": Verb("scoutless.cli.NAME:function_or_app", "the line --help shows")``.
``tests/cli/test_startup.py`` fails if ``--help`` or a verb's ``--help`` imports a heavy
library, the settings, rich or Typer's help module. The mechanism is ``cli/lazy.py``.

Global options (before the verb): ``--version``, and ``--config FILE`` (or
``SCOUTLESS_CONFIG``): a ``scoutless.toml`` settings file, read by ``config.Settings``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from scoutless.cli.lazy import Verb, lazy_group

#: every verb, in the order ``scoutless --help`` lists them
VERBS: dict[str, Verb] = {
    "data": Verb("scoutless.cli.data:app", "Generate history and build training tables."),
    "train": Verb(
        "scoutless.cli.train:train",
        "Train XGBoost baselines and the DNN per target; write a versioned bundle.",
    ),
    "evaluate": Verb(
        "scoutless.cli.evaluate:evaluate",
        "Evaluate every model of a bundle against the baselines and write an HTML report.",
    ),
    "serve": Verb(
        "scoutless.cli.serve:serve",
        "Serve predictions over HTTP (POST /v1/predict, GET /v1/tasks/{id}/prediction …).",
    ),
    "import": Verb(
        "scoutless.cli.importer:import_trace",
        "Import a job trace (SWF, PanDA job CSV, Slurm sacct, HTCondor, Nextflow, any table).",
    ),
    "size": Verb(
        "scoutless.cli.sizing:size",
        "Size a workflow's instances online (scoutless and the published baselines).",
    ),
    "monitor": Verb(
        "scoutless.cli.monitor:app", "Compare predictions with actuals, drift, alerts."
    ),
    "retrain": Verb(
        "scoutless.cli.retrain:retrain",
        "Train a challenger on recent history; promote it only if it beats the champion.",
    ),
    "registry": Verb("scoutless.cli.registry:app", "Model versions and the champion pointer."),
    "replay": Verb(
        "scoutless.cli.replay:replay",
        "Replay the history on a simulated clock; write replay.json and print the comparison.",
    ),
    "demo": Verb(
        "scoutless.cli.demo:demo",
        "Generate → build → train → evaluate → replay on the embedded SQLite default.",
    ),
    "listen": Verb(
        "scoutless.cli.panda:listen",
        "Predict every task JEDI defines and publish the prediction for JEDI to apply.",
    ),
    "dead-letters": Verb(
        "scoutless.cli.panda:dead_letters",
        "Messages the listener gave up on (the dead letter): counts and the latest, with why.",
    ),
    "taskparams": Verb(
        "scoutless.cli.panda:taskparams",
        "Fill skipScout (as the rollout decides) and ramCount/cpuTime/ioIntensity with units.",
    ),
    "rollout": Verb("scoutless.cli.rollout:app", "Shadow, canary or full: who skips scouts."),
    "online": Verb(
        "scoutless.cli.online:app",
        "Follow the jobs of sized tasks: learn each, size memory retries; a task's state.",
    ),
}

app = typer.Typer(
    name="scoutless",
    help="Predict task memory, CPU time per event, I/O and walltime at submission time.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    cls=lazy_group(VERBS),
)


def _print_version(value: bool) -> None:
    if value:
        from scoutless import __version__

        typer.echo(f"scoutless {__version__}")
        raise typer.Exit()


def _use_config(value: Path | None) -> Path | None:
    """Runs while the options are parsed, before any verb is imported: every setting read
    from here on (also by worker processes, which inherit the variable) sees the file."""
    if value is not None:
        from pydantic import ValidationError

        from scoutless.config import CONFIG_ENV, SettingsEnvError, SettingsFileError, get_settings

        os.environ[CONFIG_ENV] = str(value.resolve())
        try:  # read once here, so that a wrong key or value stops the command in one line
            get_settings()
        except (SettingsFileError, SettingsEnvError) as exc:
            raise typer.BadParameter(str(exc)) from exc
        except ValidationError as exc:
            raise typer.BadParameter(f"{value}: {exc}") from exc
    return value


@app.callback()
def options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="print the version, exit"
        ),
    ] = False,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            envvar="SCOUTLESS_CONFIG",
            exists=True,
            dir_okay=False,
            callback=_use_config,
            help="settings file (scoutless.toml); environment variables override it",
        ),
    ] = None,
) -> None:
    """Predict task memory, CPU time per event, I/O and walltime at submission time."""


def main() -> None:  # pragma: no cover - console entry
    app()
