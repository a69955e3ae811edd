"""The Nextflow trace importer: both layouts Nextflow's traces come in, a missing optional
column, malformed rows with their place, and what a failed attempt censors."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.config import SizingSettings
from scoutless.sources.common import TraceParseError
from scoutless.sources.nextflow import parse_duration, parse_size, parse_timestamp, read_nextflow

GIB = 1024**3
HUMAN_TSV = (
    "task_id\thash\tprocess\tstatus\texit\tcpus\tmemory\ttime\trealtime\trss\tpeak_rss\trchar\tattempt\n"
    "1\tab/12\tNFCORE:FASTQC\tCOMPLETED\t0\t2\t4 GB\t1h\t3m 2s\t1.2 GB\t1.5 GB\t300 MB\t1\n"
    "2\tab/13\tNFCORE:ALIGN\tFAILED\t137\t8\t16 GB\t2h\t1h 2m 3s\t15 GB\t15.8 GB\t2 GB\t1\n"
    "3\tab/14\tNFCORE:ALIGN\tFAILED\t140\t8\t32 GB\t1h\t1h\t20 GB\t21 GB\t2 GB\t2\n"
    "4\tab/15\tNFCORE:ALIGN\tFAILED\t1\t8\t32 GB\t2h\t250ms\t-\t-\t2 GB\t3\n"
)


def _raw_csv() -> str:
    rows = [
        ("1", "NFCORE:FASTQC", "COMPLETED", "0", "2", 4 * GIB, 3600000, 182000, 1.2 * GIB, 1.5 * GIB, 300 * 1024**2, "1"),
        ("2", "NFCORE:ALIGN", "FAILED", "137", "8", 16 * GIB, 7200000, 3723000, 15 * GIB, 15.8 * GIB, 2 * GIB, "1"),
        ("3", "NFCORE:ALIGN", "FAILED", "140", "8", 32 * GIB, 3600000, 3600000, 20 * GIB, 21 * GIB, 2 * GIB, "2"),
        ("4", "NFCORE:ALIGN", "FAILED", "1", "8", 32 * GIB, 7200000, 250, "-", "-", 2 * GIB, "3"),
    ]  # fmt: skip
    header = "task_id,process,status,exit,cpus,memory,time,realtime,rss,peak_rss,rchar,attempt\n"
    fmt = lambda v: v if isinstance(v, str) else str(round(v))  # noqa: E731
    return header + "".join(",".join(fmt(v) for v in r) + "\n" for r in rows)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_human_tab_and_raw_comma_layouts_read_the_same(tmp_path: Path) -> None:
    human = read_nextflow(
        [_write(tmp_path, "trace_demo.txt", HUMAN_TSV)], settings=SizingSettings()
    ).frame
    raw = read_nextflow(
        [_write(tmp_path, "trace_demo.csv", _raw_csv())], settings=SizingSettings()
    ).frame
    assert list(human["workflow"].unique()) == ["demo"]
    assert human.loc[0, "memory"] == 4 * GIB and human.loc[0, "realtime"] == 182_000
    assert human.loc[1, "realtime"] == 3_723_000 and human.loc[0, "rchar"] == 300 * 1024**2
    for col in ("cpus", "rchar", "memory", "realtime", "exit", "attempt"):
        np.testing.assert_allclose(human[col], raw[col], rtol=1e-9, err_msg=col)
    np.testing.assert_allclose(human["rss"], raw["rss"], rtol=1e-6)  # raw rounds to bytes
    assert np.isnan(human.loc[3, "rss"]) and np.isnan(raw.loc[3, "rss"])


def test_a_failed_attempt_censors_what_the_trace_says(tmp_path: Path) -> None:
    frame = read_nextflow(
        [_write(tmp_path, "t.tsv", HUMAN_TSV)], "wf", settings=SizingSettings()
    ).frame
    # 137 with peak_rss 15.8 of 16 GB: the OOM killer; 140: a run-time limit; exit 1: unknown
    assert list(frame["censors"]) == ["", "memory", "walltime", "unknown"]
    assert set(frame["workflow"]) == {"wf"}


def test_a_kill_far_below_the_limit_is_not_a_memory_bound(tmp_path: Path) -> None:
    text = HUMAN_TSV.replace("15 GB\t15.8 GB", "2 GB\t2.1 GB")
    assert (
        read_nextflow([_write(tmp_path, "t.tsv", text)], settings=SizingSettings()).frame.loc[
            1, "censors"
        ]
        == "unknown"
    )


def test_a_missing_optional_column_is_named_and_left_empty(tmp_path: Path) -> None:
    lines = [ln.split("\t") for ln in HUMAN_TSV.splitlines()]
    drop = lines[0].index("rchar")
    text = "\n".join("\t".join(c for i, c in enumerate(ln) if i != drop) for ln in lines)
    trace = read_nextflow([_write(tmp_path, "t.tsv", text)], settings=SizingSettings())
    assert trace.missing == ["rchar"]
    assert trace.frame["rchar"].isna().all() and trace.frame.loc[0, "memory"] == 4 * GIB


def test_a_required_column_missing_fails_at_the_header(tmp_path: Path) -> None:
    text = HUMAN_TSV.replace("realtime", "elapsed")
    with pytest.raises(TraceParseError, match=r"t\.tsv:1: .*realtime"):
        read_nextflow([_write(tmp_path, "t.tsv", text)], settings=SizingSettings())


def test_a_malformed_row_is_reported_with_its_place(tmp_path: Path) -> None:
    bad_size = HUMAN_TSV.replace("1.2 GB", "1.2 XB")
    with pytest.raises(TraceParseError, match=r"t\.tsv:2: column rss: not a size: '1.2 XB'"):
        read_nextflow([_write(tmp_path, "t.tsv", bad_size)], settings=SizingSettings())
    short = HUMAN_TSV.replace("\t140\t8\t", "\t140\t")
    with pytest.raises(TraceParseError, match=r"u\.tsv:4: 12 fields where the header has 13"):
        read_nextflow([_write(tmp_path, "u.tsv", short)], settings=SizingSettings())
    trace = read_nextflow(
        [_write(tmp_path, "v.tsv", short)], skip_bad=True, settings=SizingSettings()
    )
    assert len(trace.frame) == 3 and [e.line for e in trace.bad_lines] == [4]


@pytest.mark.parametrize(
    ("text", "value"),
    [("182000", 182000.0), ("3m 2s", 182000.0), ("1h 2m 3s", 3723000.0), ("250ms", 250.0),
     ("1d 1h", 90000000.0), ("2.5s", 2500.0), ("-", np.nan)],
)  # fmt: skip
def test_durations(text: str, value: float) -> None:
    np.testing.assert_equal(parse_duration(text), value)


def test_sizes() -> None:
    assert parse_size("1.5 KB") == 1536 and parse_size("2 GB") == 2 * GIB
    assert parse_size("123") == 123 and np.isnan(parse_size("-"))
    with pytest.raises(ValueError, match="not a size"):
        parse_size("12 parsecs")


_UNITS_MS = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 400), min_size=5, max_size=5),
    st.sampled_from([" ", ""]),
    st.booleans(),
)
def test_a_duration_in_nextflows_spellings_is_its_milliseconds(parts, sep, upper) -> None:
    """Any of d/h/m/s/ms in Nextflow's order (zeros left out as Nextflow leaves them),
    spaced or not, in either case; and the raw milliseconds Nextflow writes instead."""
    written = [f"{n}{u}" for n, u in zip(parts, _UNITS_MS, strict=True) if n] or ["0ms"]
    text = sep.join(written)
    total = sum(n * ms for n, ms in zip(parts, _UNITS_MS.values(), strict=True))
    assert parse_duration(text.upper() if upper else text) == total
    assert parse_duration(str(total)) == total


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 4_102_444_800_000))  # 1970 … 2100, in ms
def test_a_timestamp_raw_or_as_nextflow_writes_it_is_the_same_instant(ms: int) -> None:
    stamp = datetime.fromtimestamp(ms / 1000, tz=UTC)
    written = stamp.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}"
    assert parse_timestamp(written) == ms and parse_timestamp(str(ms)) == ms
    assert parse_timestamp(stamp.isoformat()) == ms  # with its zone


def test_a_duration_or_timestamp_that_is_neither_says_so() -> None:
    for text in ("3 parsecs", "1h 2", "h"):
        with pytest.raises(ValueError, match="not a duration"):
            parse_duration(text)
    with pytest.raises(ValueError, match="not a timestamp"):
        parse_timestamp("yesterday")


def test_the_walltime_limit_and_the_clock_are_kept(tmp_path: Path) -> None:
    header, *rows = HUMAN_TSV.splitlines()
    stamps = ["2023-01-23 16:08:23.249", "1674490103249"]
    text = "\n".join(
        [header + "\tsubmit\tcomplete"]
        + [f"{row}\t{stamps[i % 2]}\t{stamps[(i + 1) % 2]}" for i, row in enumerate(rows)]
    )
    frame = read_nextflow([_write(tmp_path, "t.tsv", text)], settings=SizingSettings()).frame
    assert list(frame["time"]) == [3_600_000, 7_200_000, 3_600_000, 7_200_000]
    assert set(frame["submit"]) == {1674490103249.0} == set(frame["complete"])
    raw = read_nextflow(
        [_write(tmp_path, "trace_raw.csv", _raw_csv())], settings=SizingSettings()
    ).frame
    assert raw["submit"].isna().all() and list(raw["time"]) == list(frame["time"])
