"""`scoutless import nextflow` then `scoutless size`, on a small synthetic trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nf_synthetic import EXAMPLE_TRACE, example_trace, synthetic_workflow
from scoutless.cli.main import app
from scoutless.sizing import lwr

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


def _flat(result) -> str:
    """The output without rich's line wrapping."""
    return " ".join(result.output.split())


@pytest.fixture(autouse=True)
def _small_lwr(monkeypatch: pytest.MonkeyPatch) -> None:
    """One small LWR model: its full fit costs seconds, and no test here is about it."""
    monkeypatch.setattr(lwr, "MODELS", 1)
    monkeypatch.setattr(lwr, "COBYLA_STEPS", 20)


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
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert "trace_bad.txt:3: column realtime: not a duration: '3 weeks'" in line
    assert "--skip-bad" in line  # a malformed row: skipping it would help


def test_skip_bad_is_not_offered_where_it_cannot_help(tmp_path: Path) -> None:
    """A missing column or an empty file is not a malformed row: --skip-bad cannot help."""
    no_rss = tmp_path / "trace_norss.txt"
    no_rss.write_text("process\trealtime\nA\t10\n")
    empty = tmp_path / "trace_empty.txt"
    empty.write_text("")
    for trace in (no_rss, empty):
        result = runner.invoke(
            app, ["import", "nextflow", str(trace), "--out", str(tmp_path / "t.csv")]
        )
        assert result.exit_code == 2, result.output
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"scoutless: error: {trace}") and "--skip-bad" not in line


def test_size_names_a_malformed_row_and_skip_bad_sizes_the_rest(tmp_path: Path) -> None:
    """A bad number in an instance table stops `size` naming its file, line and column (it
    was read as a missing value and the row dropped without a word); --skip-bad sizes the
    rest, says what it skipped and keeps it in sizing.json."""
    frame = synthetic_workflow(seed=2, rows=40)
    frame["rss"] = frame["rss"].astype(object)
    frame.loc[4, "rss"] = "12,5 GB"
    table = tmp_path / "demo.csv"
    frame.to_csv(table, index=False)
    out = tmp_path / "out"
    result = runner.invoke(app, ["size", "--trace", str(table), "--out", str(out)])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert f"{table}:6: column rss: '12,5 GB' is not a number" in line and "--skip-bad" in line
    assert not (out / "sizing.json").exists()
    args = ["size", "--trace", str(table), "--out", str(out), "--skip-bad", "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"skipped {table}:6: column rss" in " ".join(result.stderr.split())  # rich wraps
    doc = json.loads((out / "sizing.json").read_text())
    assert doc == json.loads(result.stdout)
    assert doc["skipped_rows"] == [f"{table}:6: column rss: '12,5 GB' is not a number"]
    assert sum(c["instances"] for c in doc["workflows"]["demo"]["task_types"].values()) > 0


def test_size_on_too_little_data_says_so_and_exits_2(tmp_path: Path) -> None:
    table = tmp_path / "small.csv"
    synthetic_workflow(seed=1, rows=10).to_csv(table, index=False)
    result = runner.invoke(app, ["size", "--trace", str(table), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert "nothing to size: no task type has 34 instances" in line
    assert "inf" not in result.output and "met" not in result.output
    assert not (tmp_path / "o" / "sizing.json").exists()


def test_a_baseline_that_wastes_nothing_is_never_beaten_by_inf() -> None:
    from scoutless.cli.sizing import _goal_line
    from scoutless.sizing.report import goal

    zero = {"wastage_gbh": 0.0, "failures": 0}
    methods = {"scoutless": {"wastage_gbh": 1.5, "failures": 0}, "users_presets_fair": zero}
    line = _goal_line("scoutless", goal(methods), 0)
    assert "inf" not in line and "(missed)" in line and "(met)" not in line.split(",")[0]
    assert goal({"scoutless": zero, "users_presets_fair": zero})["ratio"] == 1.0


def test_size_tables_whole_in_a_pipe_and_as_json_or_csv(tmp_path: Path) -> None:
    """Piped (no terminal: rich would assume 80 columns), every column name is whole;
    --format json is the sizing document and csv one row per method, on stdout alone."""
    table = tmp_path / "demo.csv"
    synthetic_workflow(seed=2, rows=40).to_csv(table, index=False)
    args = ["size", "--trace", str(table), "--out", str(tmp_path / "o")]
    drawn = runner.invoke(app, args)
    assert drawn.exit_code == 0, drawn.output
    for name in ("wastage GB·h", "failures", "instances", "users_presets"):
        assert name in drawn.stdout
    assert "…" not in drawn.stdout
    as_json = runner.invoke(app, [*args, "--format", "json"])
    doc = json.loads(as_json.stdout)
    assert doc["workflows"]["demo"]["methods"]["scoutless"]["instances"] == 3 * 28
    assert "wrote" in as_json.stderr
    as_csv = runner.invoke(app, [*args, "--format", "csv"])
    rows = as_csv.stdout.splitlines()
    assert rows[0].startswith("method,") and len(rows) == 1 + len(
        doc["workflows"]["demo"]["methods"]
    )
    assert runner.invoke(app, [*args, "--format", "xml"]).exit_code == 2


def test_the_shipped_example_trace_imports_and_sizes(tmp_path: Path) -> None:
    """docs/examples/trace_demo.txt (the sizing how-to's first try) is the generator's
    output, imports as a Nextflow trace and sizes with a table and exit 0."""
    shipped = ROOT / EXAMPLE_TRACE
    assert shipped.read_text() == example_trace()  # synthetic: `python tests/nf_synthetic.py`
    table = tmp_path / "demo.parquet"
    imported = runner.invoke(app, ["import", "nextflow", str(shipped), "--out", str(table)])
    assert imported.exit_code == 0, imported.output
    sized = runner.invoke(app, ["size", "--trace", str(table), "--out", str(tmp_path / "s")])
    assert sized.exit_code == 0, sized.output
    assert "demo: online instances sized" in sized.stdout and "scoutless" in sized.stdout
    doc = json.loads((tmp_path / "s" / "sizing.json").read_text())
    assert doc["workflows"]["demo"]["methods"]["scoutless"]["instances"] == 3 * 56


def test_size_live_refuses_a_table_without_times(tmp_path: Path) -> None:
    table = tmp_path / "demo.csv"
    synthetic_workflow(seed=2, rows=40).to_csv(table, index=False)
    result = runner.invoke(app, ["size", "--trace", str(table), "--protocol", "live",
                                 "--out", str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "no submit times" in _flat(result)


def test_size_walltime_reads_the_limits_the_import_kept(tmp_path: Path) -> None:
    frame = synthetic_workflow(seed=2, rows=40).drop(columns="workflow")
    frame["time"] = "4h"
    trace = tmp_path / "trace_demo.txt"
    frame.to_csv(trace, sep="\t", index=False)
    table = tmp_path / "demo.parquet"
    assert (
        runner.invoke(app, ["import", "nextflow", str(trace), "--out", str(table)]).exit_code == 0
    )
    out = tmp_path / "out"
    args = ["size", "--trace", str(table), "--out", str(out), "--resource", "walltime"]
    result = runner.invoke(app, [*args, "--features", "peers-rchar"])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "sizing.json").read_text())
    assert doc["resource"] == "walltime" and doc["features"] == "peers-rchar"
    cells = doc["workflows"]["demo"]["methods"]
    assert cells["users_presets"]["wastage_core_h"] > cells["scoutless"]["wastage_core_h"] > 0
    assert "core-h wasted" in _flat(result)
    refused = runner.invoke(app, [*args[:-1], "cputime"])
    assert refused.exit_code == 2 and "memory, walltime" in _flat(refused)
