import gzip

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.config import Settings
from scoutless.features.spec import MEASURED_COLUMNS
from scoutless.history.table import TrainingTable
from scoutless.sources.assemble import to_training_table
from scoutless.sources.common import TraceParseError
from scoutless.sources.swf import SWF_MEASURED, parse_swf_text, read_swf, swf_jobs

LANL = "swf/LANL-CM5-1994-4.1-cln.head60.swf"
LPC = "swf/LPC-EGEE-2004-1.2-cln.head60.swf"
SDSC = "swf/SDSC-SP2-1998-4.2-cln.head60.swf"


def test_header_becomes_metadata(traces):
    log = read_swf(traces / LANL)
    assert log.header["Computer"] == "Thinking Machines CM-5"
    assert log.header["UnixStartTime"] == "781275672"
    assert len(log.header["Queue"]) == 18  # repeated keys become lists
    assert len(log.jobs) == 60


def test_fields_and_unknowns_of_the_first_lanl_job(traces):
    # "    1        0      0   3691  128   3436  6676   -1   3600  5904  1   2   2   2 -1 -1 -1 -1"
    jobs = swf_jobs(read_swf(traces / LANL)).frame.set_index("jeditaskid")
    first = jobs.loc[1]
    assert first["walltime_value"] == 3691
    assert first["cputime_value"] == 3436
    assert first["memory_value"] == pytest.approx(6676 / 1024)
    assert np.isnan(first["requested_processors"])  # -1 = unknown
    assert first["walltime_request"] == 3600
    assert first["user"] == "2" and first["executable"] == "2" and pd.isna(first["queue"])
    assert first["creationdate"].timestamp() == 781275672


def test_per_job_memory_note_sets_the_unit_and_rare_memory_is_dropped(traces):
    lpc = swf_jobs(read_swf(traces / LPC))
    # LPC writes 0 memory for most short jobs: memory is unknown there, not zero
    assert "memory" not in lpc.units
    assert lpc.units["walltime"] == "s"
    lanl = swf_jobs(read_swf(traces / LANL))
    assert lanl.units["memory"] == "MB/core"


def test_lpc_per_job_memory_detected_from_header(traces):
    from scoutless.sources.swf import _memory_per_job

    assert _memory_per_job(read_swf(traces / LPC).header)
    assert not _memory_per_job(read_swf(traces / LANL).header)


def test_gzip_is_transparent(traces, tmp_path):
    packed = tmp_path / "lanl.swf.gz"
    packed.write_bytes(gzip.compress((traces / LANL).read_bytes()))
    assert read_swf(packed).jobs.equals(read_swf(traces / LANL).jobs)


def test_malformed_line_names_its_number_and_can_be_skipped(traces):
    lines = (traces / SDSC).read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if not ln.startswith(";")) + 3
    lines[at] = lines[at] + " 17"  # 19 fields
    text = "\n".join(lines)
    with pytest.raises(TraceParseError, match=rf"sdsc:{at + 1}: expected 18 fields, got 19"):
        parse_swf_text(text, source="sdsc")
    log = parse_swf_text(text, source="sdsc", skip_bad=True)
    assert len(log.jobs) == 59 and log.bad_lines[0].line == at + 1


def test_no_measured_field_is_a_feature(traces):
    jobs = swf_jobs(read_swf(traces / LANL))
    names = {f.name for f in jobs.features}
    assert not names & MEASURED_COLUMNS
    assert not names & SWF_MEASURED
    assert not any(f.source.split(":")[-1] in SWF_MEASURED for f in jobs.features)


def test_training_table_time_split_and_train_only_bins(traces):
    table = to_training_table(swf_jobs(read_swf(traces / LANL)), settings=Settings())
    assert isinstance(table, TrainingTable) and table.source == "swf"
    train, test = table.split("time")
    assert len(test) == 9 and train["creationdate"].max() <= test["creationdate"].min()
    # bins come from the training rows only: changing test values leaves them unchanged
    jobs = swf_jobs(read_swf(traces / LANL))
    late = jobs.frame["creationdate"] > train["creationdate"].max()
    jobs.frame.loc[late, "walltime_value"] *= 1000
    assert to_training_table(jobs, settings=Settings()).bins["walltime"].edges == table.bins["walltime"].edges
    for t in ("walltime", "cputime"):
        assert {f"{t}_user_request_class", f"{t}_last2_class"} <= set(table.frame.columns)


def test_saved_table_round_trips(traces, tmp_path):
    table = to_training_table(swf_jobs(read_swf(traces / SDSC)), settings=Settings())
    loaded = TrainingTable.load(table.save(tmp_path / "t.parquet"))
    assert loaded.source == "swf" and loaded.feature_names == table.feature_names
    assert "Copyright" in loaded.info["header"]


swf_like = st.lists(
    st.one_of(
        st.text(max_size=40),
        st.lists(st.sampled_from(["-1", "0", "1.5", "12", "x", "1e400", "nan"]), max_size=20).map(
            " ".join
        ),
    ),
    max_size=8,
).map("\n".join)


@settings(max_examples=150, deadline=None)
@given(swf_like)
def test_parser_parses_or_raises_its_own_error(text):
    try:
        log = parse_swf_text(text)
    except TraceParseError as exc:
        assert exc.line is not None
    else:
        assert next(iter(log.jobs.columns)) == "job_number"
        swf_jobs(log)  # normalising parsed jobs never crashes either


def _one_job_log(note: str, requested_procs: int) -> str:
    """One job on 4 processors (requested: ``requested_procs``), 8,192 KB used and asked."""
    return (
        f"; UnixStartTime: 0\n{note}"
        f"1 0 0 60 4 60 8192 {requested_procs} 600 8192 1 1 1 1 1 1 -1 -1\n"
    )


def test_memory_is_mb_per_core_of_the_jobs_cores_whatever_the_logs_quantity():
    per_processor = swf_jobs(parse_swf_text(_one_job_log("", 4))).frame.iloc[0]
    assert per_processor["cores"] == 4
    assert per_processor["memory_value"] == per_processor["memory_request"] == 8.0
    notes = (
        "; Note: The 'mem_used' column relates to: quantity=per_job type=virtual\n"
        "; Note: The 'mem_req'  column relates to: quantity=per_job type=physical\n"
    )
    per_job = swf_jobs(parse_swf_text(_one_job_log(notes, 4)))
    assert per_job.units["memory"] == "MB/core"
    row = per_job.frame.iloc[0]
    assert row["memory_value"] == row["memory_request"] == row["requested_memory_mb"] == 2.0
    # no request of processors: the job's cores are those it was given
    assert swf_jobs(parse_swf_text(_one_job_log("", -1))).frame.iloc[0]["cores"] == 4
