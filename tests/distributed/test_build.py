"""The Dask build equals the single-process table exactly, from the database and from a
Parquet export, and writes its folder atomically."""

from __future__ import annotations

import pandas as pd
import pytest
from scale_history import PER_PARTITION

from scoutless.config import Settings
from scoutless.distributed.build import build_partitioned_table
from scoutless.distributed.cluster import SchedulerError, SchedulerSpec, parse_scheduler
from scoutless.distributed.sources import ExportError, db_partitions, export_partitions
from scoutless.history.build import BadRowsError
from scoutless.history.table import COMMON_METADATA, TrainingTable, part_files


def _assert_same_table(path, reference: TrainingTable) -> TrainingTable:
    table = TrainingTable.load(path)
    pd.testing.assert_frame_equal(table.frame, reference.frame)
    assert table.bins == reference.bins
    assert table.feature_names == reference.feature_names
    return table


def _rows(report) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """Bad rows in a fixed order (the report lists them partition by partition)."""
    return report.frame().sort_values(["table", "jeditaskid", "pandaid"], ignore_index=True)


def test_db_build_equals_single_process_table(dask_client, generated_history, tmp_path):
    parts = db_partitions(generated_history.url, PER_PARTITION)
    seen: list[tuple[str, int, int]] = []
    build, report = build_partitioned_table(
        dask_client, parts, tmp_path / "table", settings=Settings(),
        on_progress=lambda *args: seen.append(args),
    )  # fmt: skip
    assert len(part_files(tmp_path / "table")) == 5 == build.info["partitions"]
    table = _assert_same_table(tmp_path / "table", generated_history.reference)
    pd.testing.assert_frame_equal(_rows(report), _rows(generated_history.report))
    assert (
        len(report) > 0 and table.info["excluded"] == generated_history.reference.info["excluded"]
    )
    assert table.info["n_jobs_in_history"] == generated_history.reference.info["n_jobs_in_history"]
    assert ("task rows", 5, 5) in seen and ("classes and splits", 5, 5) in seen
    assert len(build.frame) == len(table.frame)  # class columns for the CLI summary


def test_export_build_shuffles_by_task_and_equals_single_process(
    dask_client, generated_history, tmp_path
):
    parts = export_partitions(generated_history.export, PER_PARTITION)
    build_partitioned_table(dask_client, parts, tmp_path / "t", settings=Settings())
    _assert_same_table(tmp_path / "t", generated_history.reference)


def test_failed_build_keeps_the_previous_table_and_leaves_nothing(
    dask_client, generated_history, tmp_path
):
    out = tmp_path / "table"
    parts = db_partitions(generated_history.url, PER_PARTITION)
    build_partitioned_table(dask_client, parts, out, settings=Settings())
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(BadRowsError, match="bad rows"):
        build_partitioned_table(dask_client, parts, out, settings=Settings(), strict=True)
    assert sorted(p.name for p in out.iterdir()) == before
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
