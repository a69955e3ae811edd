"""What a results page is made of: tables of cells read from a benchmark's JSON (``--out
results/NAME.json``), and how a figure is printed. The views (``results_views.py``) lay
each JSON out with them; the pages themselves are assembled in ``results_site.py``.

Every number in a table is a :class:`Cell` that remembers where in the JSON it came from,
so a test can check that each page shows exactly what its file holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Cell:
    """A table cell: its text and, for a figure, its place in the JSON document."""

    text: str
    path: Path_ | None = None


@dataclass(frozen=True)
class Table:
    title: str
    headers: Sequence[str]
    rows: list[list[Cell]]
    note: str = ""
    #: a plot of the same figures (inline SVG), shown above the table
    svg: str = ""


@dataclass(frozen=True)
class Benchmark:
    """A benchmark's page: what it measures, how to run it, how its JSON becomes tables."""

    name: str
    title: str
    about: str
    command: str
    tables: Callable[[dict[str, Any]], list[Table]] = field(default=lambda doc: [])


#: decimals a figure below 1,000 keeps on a page (larger ones keep one)
FLOAT_DIGITS = 4


def fmt(value: Any) -> str:
    """A figure as the page prints it: thousands separated, four decimals at most."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return format(value, ",")
    if isinstance(value, float):
        return format(round(value, FLOAT_DIGITS if abs(value) < 1000 else 1), ",")
    if isinstance(value, list | dict):
        return json.dumps(value)
    return str(value)


def at(doc: Any, path: Path_) -> Any:
    """The value at ``path`` (keys and list indexes); None where it is absent."""
    for key in path:
        try:
            doc = doc[key]
        except (KeyError, IndexError, TypeError):
            return None
    return doc


#: keys whose integers name something (a seed, a task) rather than count it: no separators
IDENTIFIERS = frozenset({"seed", "task", "jeditaskid", "pandaid"})


def figure(doc: dict[str, Any], path: Path_) -> Cell:
    value = at(doc, path)
    if path and path[-1] in IDENTIFIERS and isinstance(value, int) and not isinstance(value, bool):
        return Cell(str(value), path)
    return Cell(fmt(value), path)


def label(text: Any) -> Cell:
    return Cell(str(text))


def grid(
    doc: dict[str, Any],
    base: Path_,
    rows: Sequence[str],
    cols: Sequence[str],
    title: str,
    corner: str = "",
    note: str = "",
) -> Table:
    """Rows × columns of figures under ``base`` (``base + (row, col)``)."""
    body = [
        [label(r), *(figure(doc, (*base, r, c)) for c in cols)]
        for r in rows
        if isinstance(at(doc, (*base, r)), dict)
    ]
    return Table(title, [corner, *cols], body, note)


def records(
    doc: dict[str, Any], base: Path_, cols: Sequence[str], title: str, note: str = ""
) -> Table:
    """One row per element of the list at ``base``, one column per key."""
    items = at(doc, base) or []
    body = [[figure(doc, (*base, i, c)) for c in cols] for i in range(len(items))]
    return Table(title, cols, body, note)


#: a list of plain values longer than this is left off a page (a curve, not a figure)
MAX_LIST = 8


def leaves(doc: Any, path: Path_ = ()) -> list[Path_]:
    """The path of every scalar in ``doc`` (the machine record left out: the page shows it;
    long lists of plain values left out too)."""
    if isinstance(doc, dict):
        return [
            p
            for k, v in doc.items()
            if path or k not in ("machine", "benchmark", "markdown")
            for p in leaves(v, (*path, k))
        ]
    if isinstance(doc, list) and any(isinstance(v, dict | list) for v in doc):
        return [p for i, v in enumerate(doc) for p in leaves(v, (*path, i))]
    if isinstance(doc, list) and len(doc) > MAX_LIST:
        return []  # a curve (CDF points, per-run values) is not a table cell
    return [path]


def every_figure(doc: dict[str, Any], title: str = "Figures", skip: Path_ | None = None) -> Table:
    """Every scalar of the JSON (but those under ``skip``), by its dotted path: the page of a
    benchmark without a view."""
    paths = [p for p in leaves(doc) if skip is None or p[: len(skip)] != skip]
    rows = [[label(".".join(map(str, p))), figure(doc, p)] for p in paths]
    return Table(title, ["figure", "value"], rows)


def load_result(folder: Path, name: str) -> dict[str, Any] | None:
    path = folder / f"{name}.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err})") from err
