"""The results pages: one per benchmark, built from the JSON it wrote (``--out
results/NAME.json``), with the machine, the date and the command that reproduces it.

Every number in a table is a :class:`Cell` that remembers where in the JSON it came from,
so a test can check that each page shows exactly what its file holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docsgen.markdown import code, table

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


def figure(doc: dict[str, Any], path: Path_) -> Cell:
    return Cell(fmt(at(doc, path)), path)


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


def render_table(t: Table) -> str:
    head = f"### {t.title}\n\n" if t.title else ""
    note = f"\n{t.note}\n" if t.note else ""
    return head + table(t.headers, [[c.text for c in row] for row in t.rows]) + note


def _machine(doc: dict[str, Any], command: str) -> str:
    m = doc.get("machine", {})
    loop = m.get("reference_loop_s", {})
    rows = [
        ("measured on", fmt(m.get("date"))),
        ("CPU cores", fmt(m.get("cpu_cores"))),
        (
            "reference loop (s), before / after",
            f"{fmt(loop.get('before'))} / {fmt(loop.get('after'))}",
        ),
    ]
    return "\n".join(
        [
            table(("machine", ""), rows),
            "",
            "The reference loop is a fixed pure-Python loop timed before and after the run: the "
            "smaller, the faster the machine was while the figures were taken (compare runs by it).",
            "",
            "Reproduce:",
            "",
            f"```bash\n{m.get('command') or command}\n```",
            "",
        ]
    )


def benchmark_page(bench: Benchmark, doc: dict[str, Any] | None) -> str:
    """One benchmark's page; without its JSON, how to produce it."""
    lines = [f"# {bench.title}", "", bench.about, ""]
    if doc is None:
        return "\n".join(
            [
                *lines,
                '!!! note "Not measured yet"',
                "",
                f"    No `results/{bench.name}.json` in this checkout. Produce it with",
                "",
                f"        {bench.command}",
                "",
            ]
        )
    lines.append(_machine(doc, bench.command))
    tables = bench.tables(doc) or [every_figure(doc)]
    lines += [render_table(t) for t in tables]
    return "\n".join(lines)


def load_result(folder: Path, name: str) -> dict[str, Any] | None:
    path = folder / f"{name}.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err})") from err


def index_page(docs: dict[str, dict[str, Any] | None], folder: Path) -> str:
    """The results index: every benchmark with its date, then the headline figures."""
    from docsgen.headline import headline
    from docsgen.results_views import BENCHMARKS

    rows = []
    for bench in BENCHMARKS:
        m = (docs[bench.name] or {}).get("machine", {})
        measured = docs[bench.name] is not None
        rows.append(
            (
                f"[{bench.title}]({bench.name}.md)",
                fmt(m.get("date")) if measured else "not measured",
                fmt(m.get("cpu_cores")) if measured else "",
                bench.about.split(". ")[0],
            )
        )
    intro = (
        "Each page is built from the JSON its benchmark wrote (`benchmarks/NAME.py --out "
        "results/NAME.json`): its figures are the file's (four decimals at most), with the "
        "date, the machine's cores and its speed at the time, and the command that reproduces "
        f"them. Re-run a benchmark and rebuild the site ({code('bash scripts/docs.sh')}) to "
        "update its page."
    )
    return "\n".join(
        [
            "# Results",
            "",
            intro,
            "",
            table(("benchmark", "measured on", "cores", "what it measures"), rows),
            "",
            "## Headline",
            "",
            headline(folder, lambda name: f"{name}.md"),
        ]
    )


def results_pages(folder: Path) -> dict[str, str]:
    """``results/NAME.md`` for every known benchmark, and ``results/index.md``."""
    from docsgen.results_views import BENCHMARKS

    docs = {b.name: load_result(folder, b.name) for b in BENCHMARKS}
    pages = {f"results/{b.name}.md": benchmark_page(b, docs[b.name]) for b in BENCHMARKS}
    pages["results/index.md"] = index_page(docs, folder)
    return pages
