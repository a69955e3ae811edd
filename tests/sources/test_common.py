import contextlib
import gzip
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.sources.common import (
    BadLines,
    MemoryAmount,
    TraceParseError,
    format_slurm_duration,
    format_slurm_memory,
    parse_slurm_duration,
    parse_slurm_memory,
    read_text,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [  # all from the real sacct samples
        ("5-00:00:00", 432000.0),
        ("03:33:25", 12805.0),
        ("00:15.057", 15.057),
        ("1-04:33:44", 102824.0),
        ("07:06:50", 25610.0),
        ("00:00:00", 0.0),
        ("2-03", 2 * 86400 + 3 * 3600.0),
        ("2-03:30", 2 * 86400 + 3 * 3600 + 30 * 60.0),
        ("30", 1800.0),  # a bare number is minutes, as Slurm reads --time
    ],
)
def test_parse_slurm_duration_real_values(text, seconds):
    assert parse_slurm_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["UNLIMITED", "Partition_Limit", "", "INVALID"])
def test_parse_slurm_duration_unknown_is_nan(text):
    assert math.isnan(parse_slurm_duration(text))


@pytest.mark.parametrize("text", ["1:2:3:4", "abc", "-5", "1-", "12:xx"])
def test_parse_slurm_duration_rejects_and_names_the_text(text):
    with pytest.raises(ValueError, match="Slurm duration"):
        parse_slurm_duration(text)


@given(st.integers(min_value=0, max_value=10**8))
def test_duration_round_trip(seconds):
    assert parse_slurm_duration(format_slurm_duration(seconds)) == seconds


@given(st.text(max_size=30))
def test_duration_parser_never_crashes(text):
    try:
        value = parse_slurm_duration(text)
    except ValueError as exc:
        assert "Slurm duration" in str(exc)
    else:
        assert math.isnan(value) or value >= 0


@pytest.mark.parametrize(
    ("text", "mb", "per"),
    [
        ("4Gn", 4096.0, "node"),
        ("3000Mc", 3000.0, "cpu"),
        ("123K", 123 / 1024, "job"),
        ("0.31M", 0.31, "job"),
        ("2252800K", 2200.0, "job"),
        ("0n", 0.0, "node"),
        ("199G", 199 * 1024.0, "job"),
        ("32000M", 32000.0, "job"),
    ],
)
def test_parse_slurm_memory_real_values(text, mb, per):
    amount = parse_slurm_memory(text)
    assert amount == MemoryAmount(pytest.approx(mb), per)


def test_memory_totals_scale_per_cpu_and_per_node():
    assert parse_slurm_memory("3000Mc").total_mb(cpus=256) == 768000.0
    assert parse_slurm_memory("48000Mn").total_mb(nodes=3) == 144000.0
    assert parse_slurm_memory("48000Mn").total_mb() == 48000.0


def test_parse_slurm_memory_bare_number_uses_default_unit():
    assert parse_slurm_memory("2048").mb == 2048.0
    assert parse_slurm_memory("2048", default_unit="K").mb == 2.0
    assert parse_slurm_memory("  ") is None


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(["job", "node", "cpu"]))
def test_memory_round_trip(kilobytes, per):
    amount = parse_slurm_memory(format_slurm_memory(MemoryAmount(kilobytes / 1024, per)))
    assert amount.per == per
    assert round(amount.mb * 1024) == kilobytes


@given(st.text(max_size=20))
def test_memory_parser_never_crashes(text):
    try:
        amount = parse_slurm_memory(text)
    except ValueError as exc:
        assert "Slurm memory" in str(exc)
    else:
        assert amount is None or amount.mb >= 0


def test_read_text_is_gzip_transparent(tmp_path):
    plain = tmp_path / "a.txt"
    plain.write_text("hello\n")
    packed = tmp_path / "b.swf"  # no .gz suffix: detected by the magic bytes
    packed.write_bytes(gzip.compress(b"hello\n"))
    assert read_text(plain) == read_text(packed) == "hello\n"


def test_read_text_reports_the_file(tmp_path):
    with pytest.raises(TraceParseError, match=r"missing\.swf"):
        read_text(tmp_path / "missing.swf")
    broken = tmp_path / "broken.gz"
    broken.write_bytes(b"\x1f\x8b\x08garbage")
    with pytest.raises(TraceParseError, match="gzip"):
        read_text(broken)


def test_bad_lines_raise_unless_skipping():
    error = TraceParseError("expected 18 fields, got 3", source="x.swf", line=7)
    assert str(error) == "x.swf:7: expected 18 fields, got 3"
    with pytest.raises(TraceParseError):
        BadLines().report(error)
    kept = BadLines(skip=True)
    kept.report(error)
    assert kept.errors == [error]


@settings(max_examples=50)
@given(st.binary(max_size=200))
def test_read_text_never_crashes_on_bytes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "f"
    path.write_bytes(data)
    with contextlib.suppress(TraceParseError):
        assert isinstance(read_text(path), str)
