"""The ``scoutless`` command: one sub-command group per verb, assembled here only."""

from __future__ import annotations

import typer

from scoutless.cli import (
    data,
    demo,
    evaluate,
    importer,
    monitor,
    panda,
    registry,
    replay,
    rollout,
    serve,
    sizing,
    train,
)

app = typer.Typer(
    name="scoutless",
    help="Predict task memory, CPU time per event, I/O and walltime at submission time.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
app.add_typer(data.app, name="data", help="Generate history and build training tables.")
app.command("train")(train.train)
app.command("evaluate")(evaluate.evaluate)
app.command("serve")(serve.serve)
app.command("import")(importer.import_trace)
app.command("size")(sizing.size)
app.add_typer(monitor.app, name="monitor", help="Compare predictions with actuals, drift, alerts.")
app.command("retrain")(monitor.retrain)
app.add_typer(registry.app, name="registry", help="Model versions and the champion pointer.")
app.command("replay")(replay.replay)
app.command("demo")(demo.demo)
app.command("listen")(panda.listen)
app.command("taskparams")(panda.taskparams)
app.add_typer(rollout.app, name="rollout", help="Shadow, canary or full: who skips scouts.")


def main() -> None:  # pragma: no cover - console entry
    app()
