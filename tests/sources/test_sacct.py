import contextlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.config import Settings
from scoutless.features.spec import MEASURED_COLUMNS
from scoutless.sources.assemble import to_training_table
from scoutless.sources.common import TraceParseError, parse_slurm_memory
from scoutless.sources.sacct import SACCT_MEASURED, parse_sacct_text, read_sacct, sacct_jobs


def test_parsable2_with_header_groups_steps_into_jobs(traces):
    records, bad = read_sacct(traces / "slurm/test-data1.csv")
    assert len(records) == 5 and bad == []
    frame = sacct_jobs(records).frame.set_index("jeditaskid")
    assert list(frame.index) == [43974388, 43977780]
    job = frame.loc[43974388]
    assert job["walltime_value"] == 3 * 3600 + 33 * 60 + 25  # Elapsed 03:33:25
    assert job["cputime_value"] == pytest.approx(15.057 / 2)  # TotalCPU / 2 CPUs
    assert job["memory_value"] == pytest.approx(231092 / 1024)  # MaxRSS of the batch step
    assert job["timelimit_s"] == 5 * 86400
    assert job["req_mem_mb"] == pytest.approx(2200.0)  # 2252800K
    assert job["user"] == "user1" and job["partition"] == "jupyter-long"


def test_headerless_dump_with_snowman_delimiter(traces, sacct_txt_columns):
    records, bad = read_sacct(traces / "slurm/sacct.head60.txt", columns=sacct_txt_columns)
    assert bad == [] and len(records) == 60
    jobs = sacct_jobs(records)
    frame = jobs.frame.set_index("jeditaskid")
    job = frame.loc[7965768]  # 8 CPUs, TotalCPU 15:33:59, batch MaxRSS 1294440K
    assert job["cputime_value"] == pytest.approx((15 * 3600 + 33 * 60 + 59) / 8)
    assert job["memory_value"] == pytest.approx(1294440 / 1024)
    assert job["req_gpus"] == 1 and job["req_mem_mb"] == 10 * 1024
    assert not frame["jobname"].isin(["batch", "extern"]).any()  # steps are not jobs
    # an array element gets a stable id of its own
    array_ids = [r.job for r in records if "_" in r.job]
    assert array_ids and len(jobs.frame) == len(set(jobs.frame["jeditaskid"]))


def test_headerless_dump_without_columns_is_refused(traces):
    with pytest.raises(TraceParseError, match="no header line"):
        read_sacct(traces / "slurm/sacct.head60.txt")


def test_xdmod_odd_cases(traces, xdmod_columns):
    records, bad = read_sacct(traces / "slurm/accounting-logs.log", columns=xdmod_columns)
    assert bad == []
    frame = sacct_jobs(records).frame.set_index("jeditaskid")
    assert 5692623 not in frame.index  # Elapsed 00:00:00, Start Unknown: never ran
    assert frame.loc[4103947, "req_mem_mb"] == 3000 * 256  # 3000Mc x 256 CPUs
    assert frame.loc[4107166, "walltime_value"] == 2 * 86400 + 22 * 3600 + 3 * 60 + 4
    assert math.isnan(frame.loc[4107166, "memory_value"])  # this export has no MaxRSS


def test_bad_duration_names_field_and_line(traces):
    lines = (traces / "slurm/test-data1.csv").read_text().splitlines()
    lines[2] = lines[2].replace("03:33:56", "3h34m")
    text = "\n".join(lines)
    with pytest.raises(TraceParseError, match=r"t:3: elapsed: not a Slurm duration"):
        parse_sacct_text(text, source="t")
    records, bad = parse_sacct_text(text, source="t", skip_bad=True)
    assert len(records) == 4 and bad[0].line == 3


def test_a_duration_or_memory_past_a_floats_range_names_field_and_line(traces):
    lines = (traces / "slurm/test-data1.csv").read_text().splitlines()
    lines[2] = lines[2].replace("03:33:56", "9" * 400)
    with pytest.raises(TraceParseError, match=r"t:3: elapsed: a Slurm duration past a float"):
        parse_sacct_text("\n".join(lines), source="t")
    with pytest.raises(ValueError, match="memory size past a float's range"):
        parse_slurm_memory("1e400K")


def test_features_exclude_measurements(traces):
    jobs = sacct_jobs(read_sacct(traces / "slurm/test-data1.csv")[0])
    names = {f.name for f in jobs.features}
    assert not names & MEASURED_COLUMNS and not names & SACCT_MEASURED


def test_small_dump_becomes_a_table(traces, sacct_txt_columns):
    records, _ = read_sacct(traces / "slurm/sacct.head60.txt", columns=sacct_txt_columns)
    table = to_training_table(sacct_jobs(records), settings=Settings())
    assert table.source == "sacct" and "walltime" in table.bins
    assert "walltime_last2_class" in table.frame.columns


field = st.sampled_from(
    ["", "1", "00:01:02", "1-00:00:00", "4Gn", "123K", "x", "UNLIMITED", "COMPLETED",
     "2019-07-31T22:29:13", "Unknown", "1.batch", "5_3", "☃"]
)  # fmt: skip
sacct_like = st.lists(st.lists(field, min_size=1, max_size=9).map("|".join), max_size=6)


@settings(max_examples=150, deadline=None)
@given(sacct_like, st.booleans())
def test_parser_parses_or_raises_its_own_error(lines, with_header):
    header = "JobID|User|State|Submit|End|Elapsed|TotalCPU|MaxRSS|ReqMem"
    text = "\n".join(([header] if with_header else []) + lines)
    try:
        records, _ = parse_sacct_text(text)
    except TraceParseError:
        return
    sacct_jobs(records)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_parser_never_crashes_on_text(text):
    with contextlib.suppress(TraceParseError):
        sacct_jobs(parse_sacct_text(text)[0])
