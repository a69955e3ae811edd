"""The results pages: one per benchmark, built from the JSON it wrote (``--out
results/NAME.json``) through its view, with the machine, the date and the command that
reproduces it; and the results index, with the headline figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from docsgen.headline import headline
from docsgen.markdown import code, table
from docsgen.results_pages import Benchmark, Table, every_figure, fmt, load_result
from docsgen.results_views import BENCHMARKS


def render_table(t: Table) -> str:
    head = f"### {t.title}\n\n" if t.title else ""
    if t.svg:
        head += f"{t.svg}\n\n"
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


def index_page(docs: dict[str, dict[str, Any] | None], folder: Path) -> str:
    """The results index: every benchmark with its date, then the headline figures."""
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
    docs = {b.name: load_result(folder, b.name) for b in BENCHMARKS}
    pages = {f"results/{b.name}.md": benchmark_page(b, docs[b.name]) for b in BENCHMARKS}
    pages["results/index.md"] = index_page(docs, folder)
    return pages
