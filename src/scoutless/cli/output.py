"""How a verb gives its result: tables drawn for a reader, or the same figures as data for
a program (``--format json|csv``), through one option and one printer for every verb.

In ``json`` and ``csv`` the result alone goes to stdout, so that a pipe reads it whole;
what a verb says beside it (progress, the file it wrote, a verdict) goes to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from scoutless.cli.lazy import LazyConsole

if TYPE_CHECKING:
    import pandas as pd

#: what ``--format`` takes
FORMATS: tuple[str, ...] = ("table", "json", "csv")
FormatOption = Annotated[
    str,
    typer.Option("--format", help="table (drawn) | json | csv (the figures on stdout)"),
]
_notes = LazyConsole(stderr=True)


def checked(fmt: str) -> str:
    """``fmt`` if it is one of :data:`FORMATS` (a user's error naming them otherwise)."""
    from scoutless.cli.errors import UserError

    if fmt not in FORMATS:
        raise UserError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    return fmt


def notes(fmt: str, console: Any) -> Any:
    """Where a verb says what is beside its result: ``console`` for tables, else stderr."""
    return console if fmt == "table" else _notes


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A table's rows as JSON holds them: times in ISO 8601, NaN as null."""
    return json.loads(frame.to_json(orient="records", date_format="iso"))


def give(
    fmt: str,
    draw: Callable[[], None],
    tables: Mapping[str, pd.DataFrame],
    document: Any = None,
) -> None:
    """The result in ``fmt``: ``draw()`` for ``table``; for ``json`` ``document`` (default:
    each table's rows by name); for ``csv`` the tables' rows, a ``table`` column naming
    each row's table when there are several."""
    if fmt == "table":
        draw()
    elif fmt == "json":
        from scoutless.jsonsafe import jsonable

        if document is None:
            document = {name: records(frame) for name, frame in tables.items()}
        typer.echo(json.dumps(jsonable(document), indent=1))
    else:
        import pandas as pd

        frames = [f.assign(table=name) for name, f in tables.items()] if len(tables) > 1 else list(
            tables.values()
        )
        frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        if "table" in frame.columns:
            frame = frame[["table", *(c for c in frame.columns if c != "table")]]
        frame.to_csv(sys.stdout, index=False)
