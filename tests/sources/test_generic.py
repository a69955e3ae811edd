"""The generic adapter on a CSV/Parquet derived from the real LANL excerpt (same rows)."""

import contextlib
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.config import Settings
from scoutless.sources.assemble import to_training_table
from scoutless.sources.common import TraceParseError
from scoutless.sources.generic import generic_jobs, parse_csv_text, read_table
from scoutless.sources.load import load_trace
from scoutless.sources.swf import read_swf

MAPPING = {
    "columns": {"id": "job_number", "submit_time": "submit_epoch", "end_time": "end_epoch",
                "user": "user_id"},
    "features": {"categorical": ["user_id", "queue"], "numerical": ["requested_processors"]},
    "targets": {
        "walltime": {"column": "run_time", "unit": "s", "request": "requested_time"},
        "memory": {"column": "used_memory_kb", "unit": "MB/core", "scale": 1 / 1024},
    },
}  # fmt: skip


@pytest.fixture
def lanl_csv(traces, tmp_path):
    log = read_swf(traces / "swf/LANL-CM5-1994-4.1-cln.head60.swf")
    jobs = log.jobs.copy()
    jobs["submit_epoch"] = 781275672 + jobs["submit_time"]
    jobs["end_epoch"] = jobs["submit_epoch"] + jobs["wait_time"] + jobs["run_time"]
    path = tmp_path / "lanl.csv"
    jobs.to_csv(path, index=False)
    return path, jobs


def test_csv_with_mapping(lanl_csv):
    path, _jobs = lanl_csv
    trace = load_trace("table", [path], mapping=MAPPING, settings=Settings())
    frame = trace.frame.set_index("jeditaskid")
    assert len(frame) == 60
    assert frame.loc[1, "walltime_value"] == 3691 and frame.loc[1, "walltime_request"] == 3600
    assert frame.loc[1, "memory_value"] == pytest.approx(6676 / 1024)
    assert frame.loc[1, "creationdate"].timestamp() == 781275672
    table = to_training_table(trace, settings=Settings())
    assert table.source == "table" and "walltime_last2_class" in table.frame.columns
    assert table.bins["walltime"].unit == "s"


def test_parquet_gives_the_same_rows(lanl_csv, tmp_path):
    path, jobs = lanl_csv
    parquet = tmp_path / "lanl.parquet"
    jobs.to_parquet(parquet)
    a = load_trace("table", [path], mapping=MAPPING, settings=Settings()).frame
    b = load_trace("table", [parquet], mapping=MAPPING, settings=Settings()).frame
    cols = ["jeditaskid", "walltime_value", "memory_value", "creationdate"]
    pd.testing.assert_frame_equal(a[cols], b[cols], check_dtype=False)


def test_mapping_errors_name_what_is_wrong(lanl_csv):
    path, _ = lanl_csv
    frame, _lines, _ = read_table(path)
    with pytest.raises(TraceParseError, match="submit_time"):
        generic_jobs(frame, {"targets": MAPPING["targets"]})
    bad = {**MAPPING, "targets": {"walltime": {"column": "nope"}}}
    with pytest.raises(TraceParseError, match="'nope'"):
        generic_jobs(frame, bad)
    with pytest.raises(TraceParseError, match="mapping"):
        load_trace("table", [path], settings=Settings())


def test_bad_cells_and_rows_carry_line_numbers(lanl_csv):
    path, _ = lanl_csv
    lines = path.read_text().splitlines()
    fields = lines[4].split(",")
    fields[3] = "long"  # run_time
    lines[4] = ",".join(fields)
    lines[7] += ",1"
    text = "\n".join(lines)
    with pytest.raises(TraceParseError, match=r":8: expected 20 fields, got 21"):
        parse_csv_text(text)
    frame, numbers, bad = parse_csv_text(text, skip_bad=True)
    assert len(frame) == 59 and bad[0].line == 8
    with pytest.raises(TraceParseError, match=r"x.csv:5: column 'run_time'"):
        generic_jobs(frame, MAPPING, lines=numbers, source="x.csv")
    kept = generic_jobs(frame, MAPPING, lines=numbers, bad_lines=bad, source="x.csv", skip_bad=True)
    assert len(kept.frame) == 58 and [e.line for e in kept.bad_lines] == [8, 5]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_csv_parser_parses_or_raises_own_error(text):
    try:
        frame, lines, _ = parse_csv_text(text)
    except TraceParseError:
        return
    assert len(frame) == len(lines)
    assert np.all(np.diff(lines) > 0)
    mapping = {
        "columns": {"submit_time": frame.columns[0]},
        "targets": {"walltime": {"column": frame.columns[-1]}},
    }
    with contextlib.suppress(TraceParseError):
        generic_jobs(frame, mapping)


def test_a_time_or_feature_that_does_not_parse_is_a_bad_row_not_a_silent_drop(lanl_csv):
    """An unreadable submit time (or none), end time or numerical feature names its line
    and column; skipping, each such row is reported once, in line order (they were
    dropped, or read as missing, without a word)."""
    _, jobs = lanl_csv
    frame = jobs.astype({"submit_epoch": object, "end_epoch": object,
                         "requested_processors": object})  # fmt: skip
    frame.loc[7, "requested_processors"] = "many"  # line 9
    frame.loc[2, "submit_epoch"] = "yesterday"  # line 4
    frame.loc[5, "submit_epoch"] = None  # line 7: a task needs its submit time
    frame.loc[5, "end_epoch"] = "soon"  # the same row: reported once
    frame.loc[10, "end_epoch"] = None  # not finished: a missing value, no error
    lines = list(range(2, len(frame) + 2))
    with pytest.raises(TraceParseError, match=r"x.csv:4: column 'submit_epoch': expected a submit"):
        generic_jobs(frame, MAPPING, lines=lines, source="x.csv")
    kept = generic_jobs(frame, MAPPING, lines=lines, source="x.csv", skip_bad=True)
    assert [e.line for e in kept.bad_lines] == [4, 7, 9]
    assert "column 'submit_epoch': empty; a row needs a submit time" in str(kept.bad_lines[1])
    assert "column 'requested_processors': expected a number, got 'many'" in str(kept.bad_lines[2])
    assert len(kept.frame) == len(frame) - 3
    assert kept.frame.set_index("jeditaskid").loc[11, "finished_at"] is pd.NaT


def test_epoch_milliseconds_are_refused_by_line_not_dropped_whole(lanl_csv):
    _, jobs = lanl_csv
    frame = jobs.assign(submit_epoch=jobs["submit_epoch"] * 1000)
    with pytest.raises(TraceParseError, match=r":2: column 'submit_epoch': expected a submit time"):
        generic_jobs(frame, MAPPING, lines=list(range(2, len(frame) + 2)))


def test_a_number_past_a_floats_range_is_a_bad_row_not_an_infinity(lanl_csv):
    """``inf`` or ``1e400`` parse as numbers but no job has them: such a feature, target or
    request was an infinity in the table, spoiling every quantile it entered."""
    _, jobs = lanl_csv
    frame = jobs.astype({"requested_processors": object, "requested_time": object,
                         "run_time": object})  # fmt: skip
    frame.loc[1, "requested_processors"] = "1e400"  # line 3
    frame.loc[4, "requested_time"] = "inf"  # line 6
    frame.loc[6, "run_time"] = "-Infinity"  # line 8
    lines = list(range(2, len(frame) + 2))
    said = "x.csv:3: column 'requested_processors': expected a number within a float's range"
    with pytest.raises(TraceParseError, match=re.escape(f"{said}, got '1e400'")):
        generic_jobs(frame, MAPPING, lines=lines, source="x.csv")
    kept = generic_jobs(frame, MAPPING, lines=lines, source="x.csv", skip_bad=True)
    assert [e.line for e in kept.bad_lines] == [3, 6, 8]
    numbers = kept.frame.select_dtypes("number").to_numpy(dtype=float)
    assert not np.isinf(numbers).any() and len(kept.frame) == len(frame) - 3


def test_ids_must_be_whole_numbers(lanl_csv):
    _, jobs = lanl_csv
    frame = jobs.astype({"job_number": float})
    frame.loc[3, "job_number"] = 3.5
    with pytest.raises(TraceParseError, match="must hold unique integers"):
        generic_jobs(frame, MAPPING)
