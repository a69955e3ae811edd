"""`scoutless import nextflow` then `scoutless size`, on a small synthetic trace."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from nf_synthetic import synthetic_workflow
from scoutless.cli.main import app

runner = CliRunner()


def _flat(result) -> str:
    """The output without rich's line wrapping."""
    return " ".join(result.output.split())


def test_import_then_size_writes_the_issues_json(tmp_path: Path) -> None:
    trace = tmp_path / "trace_demo.txt"
    synthetic_workflow(seed=2, rows=40).drop(columns="workflow").to_csv(
        trace, sep="\t", index=False
    )
    table = tmp_path / "demo.parquet"
    result = runner.invoke(app, ["import", "nextflow", str(trace), "--out", str(table)])
    assert result.exit_code == 0, result.output
    assert "120 attempts, 3 processes" in _flat(result)
    out = tmp_path / "out"
    result = runner.invoke(app, ["size", "--trace", str(table), "--seed", "42", "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "sizing.json").read_text())
    assert doc["seed"] == 42 and doc["protocol"] == "peers"
    cell = doc["workflows"]["demo"]["methods"]["scoutless"]
    assert cell["instances"] == 3 * 28 and 0 < cell["maq"] <= 1
    assert "scoutless" in _flat(result) and "witt_percentile" in _flat(result)


def test_size_refuses_cold_without_history(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["size", "--trace", str(tmp_path / "x.parquet"), "--out", str(tmp_path), "--cold"]
    )
    assert result.exit_code == 2 and "--history" in _flat(result)


def test_import_names_a_malformed_row(tmp_path: Path) -> None:
    trace = tmp_path / "trace_bad.txt"
    trace.write_text("process\trealtime\trss\nA\t10\t1 GB\nB\t3 weeks\t1 GB\n")
    result = runner.invoke(
        app, ["import", "nextflow", str(trace), "--out", str(tmp_path / "t.csv")]
    )
    assert result.exit_code == 1
    assert "trace_bad.txt:3: column realtime: not a duration: '3 weeks'" in _flat(result)
