"""What the verbs print: tables never cut, log lines without the source's place, results as
JSON or CSV (``cli/lazy.LazyConsole``, ``cli/output.py``)."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from rich.table import Table

from scoutless.cli.lazy import LazyConsole
from scoutless.cli.output import give

NAMES = ["method", "wastage GB·h", "first_attempt_success", "walltime_kills", "memory_kills",
         "first_prod_job_h", "undersized instances", "MAQ 0.5"]  # fmt: skip


def _table() -> Table:
    table = Table(title="figures")
    for name in NAMES:
        table.add_column(name, no_wrap=True)  # as a verb might: it is folded all the same
    table.add_row(*["1,234,567.891"] * len(NAMES))
    return table


def _printed(monkeypatch: pytest.MonkeyPatch, columns: str | None) -> str:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    out = io.StringIO()
    LazyConsole(file=out).print(_table())
    return out.getvalue()


def test_a_piped_table_is_drawn_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _printed(monkeypatch, None)  # no terminal, no $COLUMNS: rich would assume 80
    assert "…" not in text
    for name in NAMES:
        assert name in text
    assert max(len(line) for line in text.splitlines()) > 80


def test_a_table_fits_the_width_it_is_given_without_cutting(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    text = _printed(monkeypatch, "60")
    assert max(len(line) for line in text.splitlines()) <= 60
    assert "…" not in text


def test_log_lines_do_not_end_in_the_source_place() -> None:
    out = io.StringIO()
    LazyConsole(file=out, width=100).log("replaying 1,000 tasks")
    assert "replaying 1,000 tasks" in out.getvalue() and ".py:" not in out.getvalue()


def test_results_as_json_and_csv(capsys: pytest.CaptureFixture[str]) -> None:
    frame = pd.DataFrame({"when": pd.to_datetime(["2026-01-01"]), "value": [float("nan")]})
    drawn: list[bool] = []
    give("json", lambda: drawn.append(True), {"figures": frame})
    doc = json.loads(capsys.readouterr().out)
    assert doc == {"figures": [{"when": "2026-01-01T00:00:00.000", "value": None}]}
    give("csv", lambda: drawn.append(True), {"a": frame, "b": frame})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "table,when,value" and lines[1].startswith("a,") and len(lines) == 3
    give("table", lambda: drawn.append(True), {"a": frame})
    assert drawn == [True]
