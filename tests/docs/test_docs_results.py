"""The results pages show the numbers of their JSON files: every figure in every table is
compared with the value at its place in the file, read here independently; the README's
headline table is the one the JSON files give."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docsgen.headline import END, START, headline, readme_link
from docsgen.results_pages import Benchmark, at, every_figure, figure, fmt
from docsgen.results_site import benchmark_page, results_pages
from docsgen.results_views import BENCHMARKS

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
MEASURED = [b for b in BENCHMARKS if (RESULTS / f"{b.name}.json").exists()]


def _resolve(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def _same(text: str, value) -> bool:
    """A page's text for a figure against the JSON's value (four decimals, separators)."""
    if value is None:
        return text == "—"
    if isinstance(value, bool):
        return text == ("yes" if value else "no")
    if isinstance(value, int | float):
        shown = float(text.replace(",", ""))
        tolerance = 0.5e-4 if abs(value) < 1000 else 0.05
        return math.isclose(shown, value, abs_tol=tolerance * 1.0001)
    return text == (value if isinstance(value, str) else json.dumps(value))


def _markdown_rows(page: str) -> list[list[str]]:
    """Pipe-table rows as cell texts (an escaped pipe inside a cell read back as a pipe)."""
    return [
        [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\) \| ", line[2:-2])]
        for line in page.splitlines()
        if line.startswith("| ")
    ]


def test_the_headline_figures_are_measured() -> None:
    names = {b.name for b in MEASURED}
    assert {"train", "serve", "real_traces"} <= names


@pytest.mark.parametrize("bench", MEASURED, ids=lambda b: b.name)
def test_every_figure_on_a_results_page_is_its_jsons(bench: Benchmark) -> None:
    raw = json.loads((RESULTS / f"{bench.name}.json").read_text())
    tables = bench.tables(raw) or [every_figure(raw)]
    figures = [c for t in tables for row in t.rows for c in row if c.path is not None]
    assert figures, bench.name
    known = sum(_resolve_or_none(raw, c.path) is not None for c in figures)
    assert known >= len(figures) / 2, f"{bench.name}: most cells point nowhere in the JSON"
    page_rows = _markdown_rows(benchmark_page(bench, raw))
    for table in tables:
        for row in table.rows:
            assert [c.text for c in row] in page_rows
            for cell in row:
                if cell.path is not None:
                    assert _same(cell.text, _resolve_or_none(raw, cell.path)), (cell, bench.name)


def _resolve_or_none(doc, path):
    try:
        return _resolve(doc, path)
    except (KeyError, IndexError, TypeError):
        return None


@pytest.mark.parametrize("bench", MEASURED, ids=lambda b: b.name)
def test_a_results_page_says_when_where_and_how(bench: Benchmark) -> None:
    raw = json.loads((RESULTS / f"{bench.name}.json").read_text())
    machine = raw["machine"]
    page = benchmark_page(bench, raw)
    assert f"| measured on | {machine['date']} |" in page
    assert f"| CPU cores | {machine['cpu_cores']} |" in page
    assert f"```bash\n{machine['command']}\n```" in page
    assert machine["command"].startswith(f"python benchmarks/{bench.name}.py")
    assert "--out" in machine["command"]


def test_a_benchmark_without_json_says_how_to_produce_it(tmp_path: Path) -> None:
    pages = results_pages(tmp_path)
    assert set(pages) == {"results/index.md", *(f"results/{b.name}.md" for b in BENCHMARKS)}
    for bench in BENCHMARKS:
        assert "Not measured yet" in pages[f"results/{bench.name}.md"]
        assert bench.command in pages[f"results/{bench.name}.md"]


REPLAY_MACHINE = {
    "date": "2026-12-01",
    "cpu_cores": 2,
    "command": "python benchmarks/replay.py --out x",
}


def _replay_page(folder: Path, doc: dict) -> str:
    """The replay page built from ``doc`` written as ``folder/replay.json``."""
    (folder / "replay.json").write_text(json.dumps(doc))
    return results_pages(folder)["results/replay.md"]


def test_a_json_without_a_view_shows_every_figure(tmp_path: Path) -> None:
    doc = {
        "benchmark": "replay",
        "tasks": 99561,
        "seconds": {"total": 202.5},
        "per_strategy": [{"name": "scouts", "kills": 409}, {"name": "hybrid", "kills": 57}],
        "cdf": {"hours": list(range(101))},
        "range": [1.5, 2.5],
        "machine": REPLAY_MACHINE,
    }
    page = _replay_page(tmp_path, doc)
    for line in (
        "| tasks | 99,561 |",
        "| seconds.total | 202.5 |",
        "| per_strategy.1.kills | 57 |",
        "| per_strategy.0.name | scouts |",
        "| range | [1.5, 2.5] |",
    ):
        assert line in page
    assert "cdf.hours" not in page


def test_a_broken_json_names_its_file(tmp_path: Path) -> None:
    (tmp_path / "serve.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"serve\.json"):
        results_pages(tmp_path)


@given(
    st.one_of(
        st.integers(-(10**12), 10**12),
        st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9),
    )
)
def test_a_figure_reads_back_as_its_value(value) -> None:
    assert _same(fmt(value), value)


def test_a_seed_or_a_task_reads_as_its_name_a_count_with_separators() -> None:
    doc = {"rows": [{"seed": 1996, "task": 15350577, "jobs": 10568, "ratio": 0.5}]}
    cells = {k: figure(doc, ("rows", 0, k)).text for k in doc["rows"][0]}
    assert cells == {"seed": "1996", "task": "15350577", "jobs": "10,568", "ratio": "0.5"}


def test_the_readme_headline_is_the_jsons() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split(START, 1)[1].split(END, 1)[0]
    assert block.strip() == headline(RESULTS, readme_link).strip(), (
        "README.md's headline differs from results/*.json: run python -m docsgen.headline"
    )
    train = json.loads((RESULTS / "train.json").read_text())
    dnn_memory = at(train, ("results", 0, "test_quality", "memory", "dnn", "accuracy"))
    assert f"memory {fmt(dnn_memory)}" in block


def test_a_replay_document_lays_its_strategies_side_by_side(tmp_path: Path) -> None:
    strategy = {
        "time_to_first_job_s": {"p50": 8611.0, "p90": 105846.8},
        "wasted_core_hours": 4494.79,
        "memory_kills": 30,
        "cdf": {"time_to_first_job_s": [float(i) for i in range(101)]},
    }
    doc = {
        "benchmark": "replay",
        "seconds": {"total": 202.5},
        "replay": {
            "strategies": {
                "scouts": strategy,
                "hybrid": {**strategy, "memory_kills": 0, "wasted_core_hours": 1753.03},
            }
        },
        "machine": REPLAY_MACHINE,
    }
    page = _replay_page(tmp_path, doc)
    assert "| metric | scouts | hybrid |" in page
    assert "| time_to_first_job_s.p50 | 8,611.0 | 8,611.0 |" in page
    assert "| wasted_core_hours | 4,494.8 | 1,753.0 |" in page
    assert "| memory_kills | 30 | 0 |" in page
    assert "| seconds.total | 202.5 |" in page  # the run's own figures
    assert "replay.strategies.scouts" not in page  # not twice
    block = headline(tmp_path, lambda name: f"{name}.md")
    assert "scouts 8,611.0, hybrid 8,611.0" in block and "scouts 4,494.8, hybrid 1,753.0" in block


def test_the_replay_benchmarks_own_headline_shape_is_found_too(tmp_path: Path) -> None:
    doc = {
        "benchmark": "replay",
        "tasks": 99561,
        "headline": {
            "scouts": {"time_to_first_job_p50_s": 4816.0, "wasted_core_hours": 67313},
            "hybrid": {"time_to_first_job_p50_s": 0.0, "wasted_core_hours": 16350},
        },
        "machine": REPLAY_MACHINE,
    }
    page = _replay_page(tmp_path, doc)
    assert "| wasted_core_hours | 67,313 | 16,350 |" in page and "| tasks | 99,561 |" in page
    block = headline(tmp_path, lambda name: f"{name}.md")
    assert "scouts 4,816.0, hybrid 0.0" in block


def _is_benchmark(path: Path) -> bool:
    """A benchmark is a script: it has a ``main()`` and runs it as ``__main__``. The other
    files of ``benchmarks/`` (``record.py``, the serve benchmark's harness) are modules the
    scripts import, with no figure of their own."""
    source = path.read_text()
    return "\ndef main(" in source and '\nif __name__ == "__main__":' in source


def test_every_benchmark_script_has_a_results_page_and_writes_its_json() -> None:
    files = sorted((ROOT / "benchmarks").glob("*.py"))
    scripts = {p.stem for p in files if _is_benchmark(p)}
    assert {"record", "load_client", "bare_compare"}.isdisjoint(scripts)
    assert scripts == {b.name for b in BENCHMARKS}
    for name in scripts:
        source = (ROOT / "benchmarks" / f"{name}.py").read_text()
        assert "add_out(parser)" in source and "emit(" in source, name


def test_a_replay_yardstick_shows_where_its_figures_moved_from_earlier_decisions(
    tmp_path: Path,
) -> None:
    figures = {"priced_total_core_hours": 1500.0, "memory_kills": 12, "walltime_kills": 40}
    doc = {
        "sizes": {"5000": {"seeds": 1, "ranking": ["hybrid"], "checks": {},
                           "strategies": {"hybrid": figures},
                           "spread": {"hybrid": dict.fromkeys(figures, 0.0)}}},
        "runs": {"5000": {}},
        "earlier": {"decisions": {"pool_learnt": "the replay's own loads"},
                    "sizes": {"5000": {"pool_learnt": {"hybrid": {**figures, "memory_kills": 9}}}}},
        "machine": REPLAY_MACHINE,
    }  # fmt: skip
    page = _replay_page(tmp_path, doc)
    assert "| size | strategy | figure | pool_learnt | now |" in page
    assert "| 5000 | hybrid | memory_kills | 9 | 12 |" in page
    assert "pool_learnt: the replay's own loads" in page
