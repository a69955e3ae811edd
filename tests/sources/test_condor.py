import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.config import Settings
from scoutless.features.spec import MEASURED_COLUMNS
from scoutless.sources.assemble import to_training_table
from scoutless.sources.common import TraceParseError
from scoutless.sources.condor import CONDOR_MEASURED, condor_jobs, parse_condor_text, read_condor

LONG = "htcondor/history.377260.0"
LONG2 = "htcondor/history.377270.0"
JSON = "htcondor/history.377260.0.json"  # derived from LONG, see tests/data/traces/README.md
TABLE = "htcondor/htcondor_jobs.csv"


def test_long_form_last_value_wins(traces):
    ads, bad = read_condor(traces / LONG)
    assert bad == [] and len(ads) == 1
    ad = ads[0]
    assert ad["remotewallclocktime"] == 910.0  # 0.000000 first, 910.000000 last
    assert ad["imagesize"] == 350000 and ad["owner"] == "vdtuser03"
    assert ad["requestmemory"].startswith("ceiling(")  # an expression stays text


def test_long_form_job_row(traces):
    frame = condor_jobs(read_condor(traces / LONG)[0]).frame
    job = frame.iloc[0]
    assert job["jeditaskid"] == 377260 * 100_000
    assert job["walltime_value"] == 910.0
    assert job["memory_value"] == pytest.approx(350000 / 1024)  # ImageSize: no MemoryUsage
    assert job["cputime_value"] == 0.0
    assert job["creationdate"].timestamp() == 1290671437
    assert job["executable"] == "CREAM511044452_jobWrapper.sh"
    assert job["vo"] == "vdt"
    assert job["request_memory_mb"] != job["request_memory_mb"]  # expression: unknown (NaN)


def test_json_derived_from_long_form_gives_the_same_job(traces):
    from_long = condor_jobs(read_condor(traces / LONG)[0]).frame
    from_json = condor_jobs(read_condor(traces / JSON)[0]).frame
    assert from_json.equals(from_long)


def test_af_table(traces):
    ads, bad = read_condor(traces / TABLE)
    assert bad == [] and len(ads) == 17
    frame = condor_jobs(ads).frame
    assert len(frame) == 16  # the first job never accumulated wall time
    row = frame.iloc[2]  # "64a794 461645.4a9963 5 1526756602 1526777752 1526990696 1 2000 419 ..."
    assert row["owner"] == "64a794" and row["acct_group"] == "461645.4a9963"
    assert row["memory_value"] == 419 and row["request_memory_mb"] == 2000
    assert row["walltime_value"] == 192431.0 and row["walltime_request"] == 18000
    assert row["cputime_value"] == 15670.0 + 1192.0


def test_all_three_forms_together_make_a_table(traces):
    ads, _ = read_condor([traces / LONG, traces / LONG2, traces / TABLE])
    table = to_training_table(condor_jobs(ads), settings=Settings())
    assert table.source == "condor" and set(table.bins) == {"memory", "cputime", "walltime"}
    names = set(table.feature_names)
    assert not names & MEASURED_COLUMNS and not names & CONDOR_MEASURED


def test_bad_lines_are_reported_with_numbers(traces):
    text = (traces / LONG).read_text().replace("JobUniverse = 5", "JobUniverse 5")
    with pytest.raises(TraceParseError, match=r"h:27: expected 'Attribute = value'"):
        parse_condor_text(text, source="h")
    ads, bad = parse_condor_text(text, source="h", skip_bad=True)
    assert len(ads) == 1 and bad[0].line == 27
    table = (traces / TABLE).read_text().splitlines()
    table[3] += " extra"
    with pytest.raises(TraceParseError, match=r"t:4: expected 18 values, got 19"):
        parse_condor_text("\n".join(table), source="t")


def test_invalid_json_is_a_parse_error():
    with pytest.raises(TraceParseError, match="invalid JSON"):
        parse_condor_text('[{"Owner": "a",}]')
    with pytest.raises(TraceParseError, match="#0 is not an object"):
        parse_condor_text("[1]")


json_ad = st.dictionaries(
    st.sampled_from(["Owner", "QDate", "RemoteWallClockTime", "RequestCpus", "MemoryUsage",
                     "RemoteUserCpu", "ClusterId", "ProcId", "Cmd", "RequestMemory"]),
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(json_ad, max_size=5))
def test_json_ads_parse_or_raise_own_error(ads):
    try:
        parsed, _ = parse_condor_text(json.dumps(ads) if ads else "[]")
    except TraceParseError:
        return
    numbers = condor_jobs(parsed).frame.select_dtypes("number").to_numpy(dtype=float)
    assert not np.isinf(numbers).any()  # a measurement or missing, never infinite


def test_an_absurd_ad_overflowing_a_float_reads_as_not_measured():
    ad = {"RemoteWallClockTime": 100, "RemoteUserCpu": 1e308, "RemoteSysCpu": 1e308,
          "RequestCpus": 2, "MaxWallTimeMins": 1e307, "MemoryUsage": 512}  # fmt: skip
    tiny = {**ad, "RemoteUserCpu": 50, "RemoteSysCpu": 0, "RequestCpus": 1e-320}
    jobs = condor_jobs(parse_condor_text(json.dumps([ad, tiny]))[0])
    assert jobs.frame["cputime_value"].isna().all()
    assert jobs.frame["request_walltime_s"].isna().tolist() == [True, True]
    assert jobs.frame["walltime_value"].tolist() == [100, 100]
    assert jobs.frame["memory_value"].tolist() == [512, 512]
    assert jobs.info["values_out_of_range"]["cputime_value"] == 2


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=200))
def test_any_text_parses_or_raises_own_error(text):
    try:
        parsed, _ = parse_condor_text(text)
    except TraceParseError:
        return
    condor_jobs(parsed)
