import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.config import Settings
from scoutless.features.spec import MEASURED_COLUMNS
from scoutless.sources.assemble import to_training_table
from scoutless.sources.common import TraceParseError
from scoutless.sources.panda_jobs import (
    panda_jobs,
    parse_panda_jobs_text,
    read_panda_jobs,
    task_id_from_name,
)

SMALL = "panda/job_records_13332803.csv"
WITH_STATUS = "panda/job_records_10k_15350577.csv"


def test_task_id_comes_from_the_file_name(traces):
    assert task_id_from_name(traces / SMALL) == 13332803
    assert task_id_from_name(traces / WITH_STATUS) == 15350577
    with pytest.raises(TraceParseError, match="jeditaskid"):
        task_id_from_name("jobs.csv")


def test_targets_are_pandas_own_formulas_per_job(traces):
    rows, bad = read_panda_jobs(traces / SMALL)
    assert len(rows) == 40 and bad == []
    jobs = panda_jobs(rows, settings=Settings()).frame.set_index("jeditaskid")
    # first row: pandaid 3848970521, 8 cores, maxpss 6272371 kB, wall 2943 s, 100000 events
    first = jobs.loc[3848970521]
    assert first["memory_value"] == pytest.approx(math.ceil(6272371 / 8) * 1.10 / 1024)
    assert first["walltime_value"] == 2943
    io_kb = (20597476818 + 20335042) / 1024
    assert first["io_value"] == pytest.approx(io_kb / 2943 / 8)
    hs06 = 295689 / 2943  # hs06sec / wall: the job's HS06 (cores × core power)
    expected_cpu = (2943 - 600) * hs06 * 0.9 / 100000 * 1.5
    assert first["cputime_value"] == pytest.approx(expected_cpu)
    assert first["memory_request"] == pytest.approx(6786 / 8)
    assert first["walltime_request"] == 6129


def test_scout_estimate_is_one_value_per_task(traces):
    rows, _ = read_panda_jobs([traces / SMALL, traces / WITH_STATUS])
    frame = panda_jobs(rows, settings=Settings()).frame
    per_task = frame.groupby("task")["memory_scout_value"].nunique()
    assert (per_task == 1).all() and len(per_task) == 2


def test_features_are_known_before_the_job_runs(traces):
    rows, _ = read_panda_jobs(traces / SMALL)
    jobs = panda_jobs(rows, settings=Settings())
    names = {f.name for f in jobs.features}
    assert not names & MEASURED_COLUMNS
    assert not names & {"maxpss", "wall_time", "cpuconsumptiontime", "hs06sec", "cpu_eff"}


def test_split_is_the_last_jobs_of_each_task(traces):
    rows, _ = read_panda_jobs([traces / SMALL, traces / WITH_STATUS])
    table = to_training_table(panda_jobs(rows, settings=Settings()), settings=Settings())
    assert table.source == "panda-jobs"
    for _task, part in table.frame.groupby("task"):
        train = part[part["split_time"] == "train"]["jeditaskid"]
        test = part[part["split_time"] == "test"]["jeditaskid"]
        assert len(test) > 0 and train.max() < test.min()
    assert {"memory_scout_class", "memory_user_request_class"} <= set(table.frame.columns)


def test_bad_number_names_line_and_column(traces):
    lines = (traces / SMALL).read_text().splitlines()
    fields = lines[5].split(",")
    fields[24] = "lots"  # maxpss
    lines[5] = ",".join(fields)
    text = "\n".join(lines)
    with pytest.raises(TraceParseError, match=r"x.csv:6: column 'maxpss'"):
        parse_panda_jobs_text(text, task_id=1, source="x.csv")
    rows, bad = parse_panda_jobs_text(text, task_id=1, source="x.csv", skip_bad=True)
    assert len(rows) == 39 and bad[0].line == 6


def test_a_number_past_a_floats_range_names_line_and_column(traces):
    lines = (traces / SMALL).read_text().splitlines()
    fields = lines[5].split(",")
    fields[24] = "1e999"  # maxpss: a number, but past a float's range
    lines[5] = ",".join(fields)
    text = "\n".join(lines)
    with pytest.raises(TraceParseError, match=r"x.csv:6: column 'maxpss': expected a number "
                       r"within a float's range, got '1e999'"):  # fmt: skip
        parse_panda_jobs_text(text, task_id=1, source="x.csv")


def test_missing_required_column_is_reported():
    with pytest.raises(TraceParseError, match="missing columns"):
        parse_panda_jobs_text("pandaid,maxpss\n1,2\n", task_id=1)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from(["1", "0", "", "x", "-3", "1e9", "nan", '"']), min_size=0, max_size=6
        ),
        max_size=6,
    )
)
def test_parser_parses_or_raises_its_own_error(rows):
    header = "pandaid,maxpss,wall_time,actualcorecount,minramcount,nevents"
    text = "\n".join([header, *(",".join(r) for r in rows)])
    try:
        frame, _ = parse_panda_jobs_text(text, task_id=7)
    except TraceParseError:
        return
    if len(frame):
        panda_jobs(frame, settings=Settings())  # normalising never crashes on what parsed
    assert isinstance(frame, pd.DataFrame) and np.all(frame["jeditaskid_of_task"] == 7)
