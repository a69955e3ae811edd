"""The Dask build equals the single-process table exactly, from the database and from a
Parquet export, and writes its folder atomically."""

from __future__ import annotations

import pandas as pd
import pytest
from scale_history import copy_of, db_parts, export_parts

from scoutless.config import Settings
from scoutless.distributed.build import build_partitioned_table
from scoutless.distributed.cluster import SchedulerError, SchedulerSpec, parse_scheduler
from scoutless.distributed.sources import ExportError, export_partitions
from scoutless.history.table import COMMON_METADATA, TrainingTable, part_files
from scoutless.history.validation import BadRowsError


def _assert_same_table(path, reference: TrainingTable) -> TrainingTable:
    table = TrainingTable.load(path)
    pd.testing.assert_frame_equal(table.frame, reference.frame)
    assert table.bins == reference.bins
    assert table.feature_names == reference.feature_names
    return table


def _rows(report) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """Bad rows in a fixed order (the report lists them partition by partition)."""
    return report.frame().sort_values(["table", "jeditaskid", "pandaid"], ignore_index=True)


def test_db_build_equals_single_process_table(db_build, generated_history):
    assert len(part_files(db_build.path)) == 5 == db_build.info["partitions"]
    assert "memory_bayes_class" in generated_history.reference.frame  # the truth path ran
    table = _assert_same_table(db_build.path, generated_history.reference)
    pd.testing.assert_frame_equal(_rows(db_build.report), _rows(generated_history.report))
    reference = generated_history.reference
    assert len(db_build.report) > 0 and table.info["excluded"] == reference.info["excluded"]
    assert table.info["n_jobs_in_history"] == reference.info["n_jobs_in_history"]
    assert ("task rows", 5, 5) in db_build.progress
    assert ("classes and splits", 5, 5) in db_build.progress
    assert db_build.n_summary_rows == len(table.frame)  # class columns for the CLI summary


def test_export_build_shuffles_by_task_and_equals_single_process(
    dask_client, generated_history, tmp_path
):
    parts = export_parts(generated_history)
    build_partitioned_table(dask_client, parts, tmp_path / "t", settings=Settings())
    _assert_same_table(tmp_path / "t", generated_history.reference)


def test_failed_build_keeps_the_previous_table_and_leaves_nothing(
    dask_client, db_build, generated_history, tmp_path
):
    out = copy_of(db_build, tmp_path)
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    parts = db_parts(generated_history)
    with pytest.raises(BadRowsError, match="bad rows"):
        build_partitioned_table(dask_client, parts, out, settings=Settings(), strict=True)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["table"]  # no staging folder left
    _assert_same_table(out, generated_history.reference)


def test_incomplete_folder_is_refused(tmp_path):
    (tmp_path / "t").mkdir()
    with pytest.raises(ValueError, match=COMMON_METADATA):
        TrainingTable.load(tmp_path / "t")


def test_export_without_a_table_is_named(tmp_path):
    (tmp_path / "jedi_tasks").mkdir()
    with pytest.raises(ExportError, match="jobsarchived4"):
        export_partitions(tmp_path, 10)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, None),
        ("local:3", SchedulerSpec(n_workers=3)),
        ("tcp://10.0.0.5:8786", SchedulerSpec(address="tcp://10.0.0.5:8786")),
        ("scheduler.example.org:8786", SchedulerSpec(address="tcp://scheduler.example.org:8786")),
    ],
)
def test_scheduler_values(text, expected):
    assert parse_scheduler(text) == expected


@pytest.mark.parametrize("text", ["local:0", "local:x", "yarn"])
def test_bad_scheduler_values_are_refused(text):
    with pytest.raises(SchedulerError, match="--scheduler"):
        parse_scheduler(text)


def test_cli_data_build_on_an_existing_cluster(dask_cluster, generated_history, tmp_path):
    from typer.testing import CliRunner

    from scoutless.cli.main import app

    out = tmp_path / "table"
    args = ["data", "build", "--db", generated_history.url, "--out", str(out),
            "--scheduler", dask_cluster.scheduler_address]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "bad rows excluded" in result.output and "training table" in result.output
    assert (tmp_path / "table.bad_rows.csv").exists()
    _assert_same_table(out, generated_history.reference)


def test_cli_refuses_an_unreachable_scheduler(generated_history, tmp_path):
    from typer.testing import CliRunner

    from scoutless.cli.main import app

    args = ["data", "build", "--db", generated_history.url, "--out", str(tmp_path / "t"),
            "--scheduler", "local:0"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "local:N" in result.output
    assert not (tmp_path / "t").exists()
