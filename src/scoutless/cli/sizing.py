"""`scoutless import nextflow …` (a Nextflow trace as a raw instance table) and
`scoutless size …` (online per-instance sizing under the peers' protocol)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from scoutless.cli.lazy import LazyConsole, get_settings
from scoutless.cli.output import FormatOption, checked, give, notes

if TYPE_CHECKING:
    import pandas as pd
    from rich.table import Table

# pandas and the online sizer are imported by the functions that run, so that
# `scoutless size --help` and `scoutless import --help` stay light (cli/main.py)
console = LazyConsole()
#: progress goes to stderr: with ``--format json`` or ``csv`` stdout holds the result alone
err_console = LazyConsole(stderr=True)
PROTOCOLS = ("peers", "live")
FEATURES_HELP = (
    "input size: submission (known at release) | peers-rchar (bytes read during the run, "
    "as the peers' regressions take it)"
)
#: `scoutless import nextflow --workflow NAME`
WorkflowOption = Annotated[
    str | None,
    typer.Option(help="nextflow: the workflow's name (default: the file's stem, no trace_)"),
]


def import_nextflow(files: list[Path], workflow: str | None, out: Path, skip_bad: bool) -> None:
    """Write Nextflow trace file(s) as a raw instance table (Parquet, or CSV by suffix)."""
    from scoutless.cli.errors import trace_error
    from scoutless.sources.common import TraceParseError
    from scoutless.sources.nextflow import read_nextflow

    try:
        trace = read_nextflow(files, workflow, skip_bad=skip_bad, settings=get_settings().sizing)
    except TraceParseError as exc:
        raise trace_error(exc, skip_bad) from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".parquet":
        trace.frame.to_parquet(out, index=False)
    else:
        trace.frame.to_csv(out, index=False)
    for err in trace.bad_lines[:10]:
        console.print(f"[yellow]skipped {err}")
    if trace.missing:
        console.print(f"[yellow]columns not in the trace: {', '.join(trace.missing)}")
    causes = trace.frame["censors"].value_counts().to_dict()
    failed = {k: int(v) for k, v in causes.items() if k}
    console.print(
        f"{out}: {len(trace.frame)} attempts, {trace.frame['process'].nunique()} processes"
        + (f"; failed attempts by what they censor: {failed}" if failed else "")
    )


#: a results key's unit suffix as a reader reads it
UNITS = {"gbh": "GB·h", "core_h": "core-h"}


def _table(name: str, result: dict, unit: str = "gbh") -> Table:
    from rich.table import Table

    shown = UNITS[unit]
    view = Table(title=f"{name}: online instances sized ({shown} wasted / failures)")
    for col in ("method", f"wastage {shown}", "over", "under", "failures", "MAQ", "instances"):
        view.add_column(col, justify="left" if col == "method" else "right")
    methods = sorted(result["methods"].items(), key=lambda kv: kv[1][f"wastage_{unit}"])
    for method, cell in methods:
        view.add_row(
            method, f"{cell[f'wastage_{unit}']:,.2f}", f"{cell[f'over_{unit}']:,.2f}",
            f"{cell[f'under_{unit}']:,.2f}", str(cell["failures"]), f"{cell['maq']:.3f}",
            str(cell["instances"]),
        )  # fmt: skip
    return view


def _goal_line(method: str, g: dict, failures: int) -> str:
    """A method against the best baseline; a ratio that is not a number is never "met"."""
    import math

    ratio = g["ratio"]
    wastage = (f"{ratio:.3f} × {g['best_baseline']}'s wastage "
               f"({'met' if g['wastage_met'] else 'missed'})"
               if math.isfinite(ratio) else
               f"wastes more than {g['best_baseline']}, which wastes nothing (missed)")  # fmt: skip
    return (f"{method}: {wastage}, failures {failures} vs {g['baseline_failures']} "
            f"({'met' if g['failures_met'] else 'missed'})")  # fmt: skip


def _check_options(**given: str) -> None:
    """Each named option's value among its choices. Raises UserError naming them."""
    from scoutless.cli.errors import UserError
    from scoutless.sizing.instances import FEATURES
    from scoutless.sizing.resources import RESOURCES

    choices = {"protocol": PROTOCOLS, "resource": RESOURCES, "features": tuple(FEATURES)}
    for option, value in given.items():
        if value not in choices[option]:
            raise UserError(f"unknown {option} {value!r}; expected one of "
                            f"{', '.join(choices[option])}")  # fmt: skip


def _sized(frame: pd.DataFrame, name: str, seed: int, **how: Any) -> dict:
    """`size_workflow` on ``frame`` with a bar of the task types walked (on a terminal's
    stderr, gone when done: stdout keeps the result alone), a table the live protocol cannot
    size a UserError."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from scoutless.cli.errors import UserError
    from scoutless.sizing.live import NoClock
    from scoutless.sizing.report import size_workflow

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn()]  # fmt: skip
    shown = err_console.is_terminal  # a pipe or a log gets no bar (nor its blank line)
    with Progress(*columns, console=err_console, transient=True, disable=not shown) as bar:
        step = bar.add_task(f"sizing {name}", total=None)

        def on_type(done: int, total: int, type_name: str) -> None:
            short = type_name.rsplit(":", 1)[-1]
            bar.update(step, total=total, completed=done, description=f"{name}: {short}")

        try:
            return size_workflow(frame, name, seed, on_type=on_type, **how)
        except NoClock as exc:
            raise UserError(f"--protocol live: {exc}") from exc


def _read_tables(
    trace: Path, history: list[Path] | None, skip_bad: bool, said: Any
) -> tuple[Any, list | None, list[str]]:
    """The instance table, the other workflows' (None: not sized cold) and the malformed
    rows skipped (``skip_bad``; else the first stops the run, naming its file and line),
    each skipped row said (the first ten) and returned for sizing.json."""
    from scoutless.cli.errors import UserError, trace_error
    from scoutless.sizing.instances import read_instances
    from scoutless.sources.common import BadLines, TraceParseError

    bad = BadLines(skip=skip_bad)
    try:
        frame = read_instances(trace, bad)
        histories = [read_instances(h, bad) for h in history or []] if history is not None else None
    except TraceParseError as exc:
        raise trace_error(exc, skip_bad) from exc
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    for err in bad.errors[:10]:
        said.print(f"skipped {err}")
    if len(bad) > 10:
        said.print(f"skipped {len(bad) - 10} more malformed rows (all in sizing.json)")
    return frame, histories, [str(e) for e in bad.errors]


def size(
    trace: Annotated[Path, typer.Option("--trace", help="instance table (import nextflow)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="folder for sizing.json")],
    protocol: Annotated[str, typer.Option(help=" | ".join(PROTOCOLS))] = "peers",
    seed: Annotated[int, typer.Option(help="the split's random_state")] = 1996,
    workflow: Annotated[str | None, typer.Option(help="default: the table's")] = None,
    cold: Annotated[
        bool, typer.Option("--cold", help="also size with none of its own history")
    ] = False,
    history: Annotated[
        list[Path] | None,
        typer.Option("--history", help="other workflows' instance tables (--cold)"),
    ] = None,
    resource: Annotated[str, typer.Option(help="memory | walltime")] = "memory",
    features: Annotated[str, typer.Option(help=FEATURES_HELP)] = "submission",
    skip_bad: Annotated[
        bool, typer.Option("--skip-bad", help="skip malformed rows (default: stop at the first)")
    ] = False,
    fmt: FormatOption = "table",
) -> None:
    """Size a workflow's instances online (scoutless and the published baselines).

    Needs at least one task type with 34 instances (rss > 0, realtime > 0), the peers'
    protocol's minimum; exits 2 saying so otherwise."""
    from scoutless.atomic import atomic_write_text  # here, as the rest: `size --help` stays light
    from scoutless.cli.errors import UserError
    from scoutless.jsonsafe import jsonable  # numpy: imported here, `size --help` stays light
    from scoutless.sizing.instances import workflow_name
    from scoutless.sizing.resources import resource as resource_named

    fmt = checked(fmt)
    _check_options(protocol=protocol, resource=resource, features=features)
    if cold and not history:
        raise UserError("--cold needs --history TABLE (other workflows' instance tables)")
    said = notes(fmt, console)  # stderr where stdout carries json or csv
    frame, histories, skipped = _read_tables(trace, history if cold else None, skip_bad, said)
    name = workflow or (str(frame["workflow"].iloc[0]) if len(frame) else workflow_name(trace))
    start = time.perf_counter()
    settings = get_settings()
    sized = resource_named(resource, settings)
    result = _sized(frame, name, seed, settings=settings, cold_histories=histories,
                    resource=sized, features=features, protocol=protocol)  # fmt: skip
    doc = {
        "protocol": protocol, "resource": resource, "features": features, "seed": seed,
        "seconds": round(time.perf_counter() - start, 1), "workflows": {name: result},
        "skipped_rows": skipped,
    }  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "sizing.json", json.dumps(jsonable(doc), indent=1))
    import pandas as pd

    cells = pd.DataFrame([{"method": m, **c} for m, c in result["methods"].items()])
    give(fmt, lambda: console.print(_table(name, result, sized.unit)), {"methods": cells},
         document=doc)  # fmt: skip
    for method, g in result["goal"].items():
        said.print(_goal_line(method, g, result["methods"][method]["failures"]))
    said.print(f"wrote {out / 'sizing.json'}")
