"""`read_instances`: a malformed row of an instance table is named by its file, line and
column, or (skipping) left out and reported — never read as a missing value and dropped
without a word; cells that say "not recorded" stay missing values."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.sizing.instances import read_instances
from scoutless.sources.common import BadLines, TraceParseError

HEADER = "workflow,process,rss,realtime,rchar\n"


def _write(tmp_path: Path, body: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(HEADER + body)
    return path


def test_a_cell_that_is_not_a_number_names_its_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "w,A,100,5,1\nw,A,1O0,5,1\nw,B,7,x,1\n")
    with pytest.raises(TraceParseError) as caught:
        read_instances(path)
    assert str(caught.value) == f"{path}:3: column rss: '1O0' is not a number"
    assert caught.value.skippable  # a malformed row: --skip-bad would help


def test_skipping_leaves_out_every_malformed_row_and_reports_each_in_file_order(
    tmp_path: Path,
) -> None:
    body = "w,A,100,5,1\nw,A,100,5\nw,A,1O0,5,1\nw,B,7,5,1,9\nw,B,7,x,y\nw,B,8,6,2\n"
    bad = BadLines(skip=True)
    frame = read_instances(_write(tmp_path, body), bad)
    assert frame["rss"].tolist() == [100, 8] and frame["realtime"].tolist() == [5, 6]
    assert [e.line for e in bad.errors] == [3, 4, 5, 6]
    assert "4 fields where the header has 5" in str(bad.errors[0])
    assert "column rss" in str(bad.errors[1]) and "6 fields" in str(bad.errors[2])
    assert "column realtime: 'x'" in str(bad.errors[3])  # its first bad cell only


@pytest.mark.parametrize("quoted", [False, True], ids=["fast", "exact"])
def test_a_number_past_a_floats_range_is_a_malformed_row_on_either_path(
    tmp_path: Path, quoted: bool
) -> None:
    """``inf`` or ``1e400`` parse as numbers; a need of infinity would size every other
    instance of its type at infinity."""
    name = '"A"' if quoted else "A"  # a quote sends the table through the exact reader
    body = f"w,{name},100,5,1\nw,A,inf,5,1\nw,A,100,1e400,1\nw,A,8,6,2\n"
    bad = BadLines(skip=True)
    frame = read_instances(_write(tmp_path, body), bad)
    assert frame["rss"].tolist() == [100, 8]
    assert [e.line for e in bad.errors] == [3, 4]
    assert "column rss: 'inf' is past a float's range" in str(bad.errors[0])
    assert "column realtime" in str(bad.errors[1]) and "past a float's range" in str(bad.errors[1])


def test_not_recorded_cells_are_missing_values_not_errors(tmp_path: Path) -> None:
    frame = read_instances(_write(tmp_path, "w,A,100,5,-\nw,A,100,5,\nw,A,100,5,NaN\n\n"))
    assert len(frame) == 3 and frame["rchar"].isna().all()
    assert frame["rss"].dtype.kind in "if"


def test_a_gzipped_table_and_a_parquet_one_are_checked_alike(tmp_path: Path) -> None:
    gz = tmp_path / "t.csv.gz"
    gz.write_bytes(gzip.compress((HEADER + "w,A,100,5,1\nw,A,abc,5,1\n").encode()))
    with pytest.raises(TraceParseError, match=r"t\.csv\.gz:3: column rss: 'abc'"):
        read_instances(gz)
    table = pd.DataFrame({"process": ["A", "A"], "rss": ["100", "lots"], "realtime": [5, 5]})
    table.to_parquet(tmp_path / "t.parquet")
    bad = BadLines(skip=True)
    frame = read_instances(tmp_path / "t.parquet", bad)
    assert len(frame) == 1 and [str(e) for e in bad.errors] == [
        f"{tmp_path / 't.parquet'}: row 1: column rss: 'lots' is not a number"
    ]


def test_a_table_without_a_header_or_a_required_column_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match="empty instance table"):
        read_instances(tmp_path / "empty.csv")
    (tmp_path / "norss.csv").write_text("process,realtime\nA,5\n")
    with pytest.raises(ValueError, match="lacks column"):
        read_instances(tmp_path / "norss.csv")


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.integers(min_value=0, max_value=10**12), min_size=1, max_size=30),
    junk=st.lists(st.integers(min_value=0, max_value=29), max_size=8),
    text=st.text(alphabet="abcxyz!?#", min_size=1, max_size=5),
)
def test_exactly_the_rows_with_junk_are_reported_and_the_rest_kept(
    tmp_path_factory: pytest.TempPathFactory, values: list[int], junk: list[int], text: str
) -> None:
    cells = [str(v) for v in values]
    spoilt = sorted({j for j in junk if j < len(cells)})
    for j in spoilt:
        cells[j] = text
    body = "".join(f"w,A,{c},1,1\n" for c in cells)
    bad = BadLines(skip=True)
    frame = read_instances(_write(tmp_path_factory.mktemp("t"), body), bad)
    assert [e.line for e in bad.errors] == [j + 2 for j in spoilt]
    kept = [v for i, v in enumerate(values) if i not in spoilt]
    assert np.array_equal(frame["rss"].to_numpy(), np.asarray(kept, dtype=frame["rss"].dtype))


def test_the_fast_and_the_exact_reader_agree(tmp_path: Path) -> None:
    """A table whose every row is one line goes through pandas' C reader; a quoted field
    (which may hold a comma or a line break) through the csv module: the same rows, numbers
    and errors either way."""
    body = "w,A,100,5,1\nw,A,x1,5,1\nw,B,-,7,NULL\nw,B,8,6,2\n"
    quoted = body.replace("w,B,8", '"w",B,8')
    out = []
    for name, text in (("plain.csv", body), ("quoted.csv", quoted)):
        bad = BadLines(skip=True)
        frame = read_instances(_write(tmp_path, text, name), bad)
        out.append((frame[["rss", "realtime", "rchar"]], [(e.line, e.message) for e in bad.errors]))
    pd.testing.assert_frame_equal(out[0][0], out[1][0], check_dtype=False)
    assert out[0][1] == out[1][1] == [(3, "column rss: 'x1' is not a number")]
