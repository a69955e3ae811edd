import json
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import create_engine
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.config import HistorySettings, Settings
from scoutless.features.history import (
    TARGET_STATS,
    TEMPLATE_COLUMN,
    feature_name,
    history_features,
    history_keys,
    seconds,
    with_derived_keys,
)
from scoutless.history.store import read_states
from scoutless.history.store_reader import features_from_states
from scoutless.history.table import TrainingTable
from scoutless.sources.load import load_trace

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
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert f"bad.swf:{len(lines)}: expected 18 fields" in line
    assert line.endswith("; --skip-bad skips malformed lines")
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


def test_import_fills_the_history_store_with_the_tables_template_history(tmp_path):
    """The template key (user × request) the table's features use is the one the store
    keeps: a job submitted after the whole trace gets the same template history from the
    store as the table's own sweep gives it."""
    src = TRACES / "swf/SDSC-SP2-1998-4.2-cln.head60.swf"
    db, out = f"sqlite:///{tmp_path / 'store.sqlite'}", tmp_path / "sdsc.parquet"
    result = runner.invoke(app, ["import", "swf", str(src), "--out", str(out), "--quantiles",
                                 "3", "--history-db", db])  # fmt: skip
    assert result.exit_code == 0, result.output
    table = TrainingTable.load(out)
    assert feature_name("template", "last", "walltime") in {f.name for f in table.features}

    jobs = load_trace("swf", [src], settings=Settings()).frame
    keys, targets = history_keys(list(jobs.columns)), list(table.bins)
    after = jobs["finished_at"].max() + pd.Timedelta("1h")  # one probe per template
    probes = jobs.drop_duplicates(["user", "requested_processors", "walltime_request"]).assign(
        creationdate=after, finished_at=pd.NaT, **{f"{t}_value": np.nan for t in targets}
    )
    every = pd.concat([jobs, probes], ignore_index=True)
    expected = history_features(
        every, keys=keys, values={t: every[f"{t}_value"].to_numpy(float) for t in targets},
        submit_s=seconds(every["creationdate"]), finished_s=seconds(every["finished_at"]),
        cfg=HistorySettings(),
    ).iloc[len(jobs):]  # fmt: skip
    probes = with_derived_keys(every.iloc[len(jobs) :], keys)
    with create_engine(db).connect() as conn:
        states = read_states(conn, {("template", v) for v in probes[TEMPLATE_COLUMN].dropna()})
    assert len({key for _, key, _ in states}) > 3  # several templates stored
    got, _ = features_from_states(
        states, probes, {"template": TEMPLATE_COLUMN}, targets, cfg=HistorySettings()
    )
    names = [feature_name("template", s, t) for t in targets for s in TARGET_STATS]
    np.testing.assert_allclose(got[names].to_numpy(float), expected[names].to_numpy(float),
                               rtol=1e-9, equal_nan=True)  # fmt: skip


def test_import_condor_says_which_absurd_values_it_read_as_not_measured(tmp_path):
    (ad,) = [
        {**a, "RemoteUserCpu": 1e308, "RemoteSysCpu": 1e308}
        for a in json.loads((TRACES / "htcondor/history.377260.0.json").read_text())
    ]
    ads = [{**ad, "ClusterId": 1000 + i, "RemoteUserCpu": 100.0 + 7 * i, "RemoteSysCpu": 0,
            "RemoteWallClockTime": 300.0 + 11 * i, "QDate": ad["QDate"] + 60 * i}
           for i in range(60)]  # fmt: skip
    src = tmp_path / "history.json"
    src.write_text(json.dumps([*ads, {**ad, "QDate": ad["QDate"] + 3600}]))
    out = tmp_path / "condor.parquet"
    result = runner.invoke(
        app, ["import", "condor", str(src), "--out", str(out), "--quantiles", "3"]
    )
    assert result.exit_code == 0, result.output
    assert "read as not measured: cputime_value 1" in result.output
    table = TrainingTable.load(out)
    assert table.info["values_out_of_range"] == {"cputime_value": 1}
    assert np.isfinite(table.frame["cputime_value"].dropna()).all()
