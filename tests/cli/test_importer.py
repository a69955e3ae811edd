from pathlib import Path

from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.history.table import TrainingTable

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
runner = CliRunner()


def test_import_swf_writes_a_training_table(tmp_path):
    out = tmp_path / "lanl.parquet"
    src = TRACES / "swf/LANL-CM5-1994-4.1-cln.head60.swf"
    result = runner.invoke(app, ["import", "swf", str(src), "--out", str(out), "--quantiles", "3"])
    assert result.exit_code == 0, result.output
    table = TrainingTable.load(out)
    assert table.source == "swf"
    assert {b.n_classes for b in table.bins.values()} <= {2, 3}
    assert "walltime" in result.output


def test_import_stops_at_a_bad_line_unless_skipping(tmp_path):
    lines = (TRACES / "swf/SDSC-SP2-1998-4.2-cln.head60.swf").read_text().splitlines()
    lines.append("12 34 oops")
    bad = tmp_path / "bad.swf"
    bad.write_text("\n".join(lines) + "\n")
    out = tmp_path / "t.parquet"
    result = runner.invoke(app, ["import", "swf", str(bad), "--out", str(out)])
    assert result.exit_code == 1
    assert f"bad.swf:{len(lines)}: expected 18 fields" in result.output.replace("\n", "")
    assert not out.exists()
    result = runner.invoke(app, ["import", "swf", str(bad), "--out", str(out), "--skip-bad"])
    assert result.exit_code == 0, result.output
    assert TrainingTable.load(out).info["n_bad_lines"] == 1


def test_import_sacct_with_column_mapping(tmp_path):
    mapping = tmp_path / "cols.toml"
    mapping.write_text(
        'columns = "JobID,JobName,User,Partition,NodeList,NNodes,NCPUs,NTasks,State,Submit,'
        "Start,End,Timelimit,Elapsed,TotalCPU,CPUTime,UserCPU,SystemCPU,ReqMem,MaxRSS,"
        "MaxVMSize,ReqTRES,AllocTRES,TRESUsageInMax,TRESUsageInTot,TRESUsageOutTot,"
        "MaxDiskRead,MaxDiskWrite,MaxRSSNode,MaxRSSTask,MaxVMSizeNode,MaxVMSizeTask,"
        'MaxDiskReadNode,MaxDiskReadTask,MaxDiskWriteNode,MaxDiskWriteTask,Comment"\n'
    )
    out = tmp_path / "s.parquet"
    src = TRACES / "slurm/sacct.head60.txt"
    args = ["import", "sacct", str(src), "--out", str(out), "--mapping", str(mapping)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert TrainingTable.load(out).source == "sacct"


def test_unknown_format_is_refused(tmp_path):
    result = runner.invoke(app, ["import", "pbs", str(TRACES / "README.md")])
    assert result.exit_code == 2 and "unknown format" in result.output


def test_imported_trace_trains_and_evaluates_on_its_time_split(tmp_path):
    """train and evaluate take a trace's recommended split (its latest submissions) by default."""
    import json

    table = tmp_path / "lanl.parquet"
    src = TRACES / "swf/LANL-CM5-1994-4.1-cln.head60.swf"
    result = runner.invoke(
        app, ["import", "swf", str(src), "--out", str(table), "--quantiles", "2"]
    )
    assert result.exit_code == 0, result.output
    bundle = tmp_path / "bundle"
    args = ["train", "--table", str(table), "--out", str(bundle), "--models", "xgb"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["training"]["split"] == "time"
    report = tmp_path / "report"
    args = ["evaluate", "--bundle", str(bundle), "--table", str(table), "--out", str(report)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    metrics = json.loads((report / "metrics.json").read_text())
    assert (
        metrics["dataset"]["rows_test"]
        == (TrainingTable.load(table).frame["split_time"] == "test").sum()
    )
