"""Within-task mechanisms of the generator: failures with PanDA's codes, retries, scouts'
clock and sites, the tiny-task tail, and jobsarchived4 columns as PanDA names them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import BigInteger, DateTime, Integer, String

from scoutless.config import Settings, WithinTaskSettings, get_settings
from scoutless.history.schema import jobsarchived4
from scoutless.history.synthetic import generate_chunk
from scoutless.history.synthetic.realism import TaskJobs, scout_ratios
from scoutless.targets.estimators import compute_task_targets

DDL = Path(__file__).resolve().parents[3] / "shared" / "data" / "panda-database"
#: Columns this project added for the replay, with PanDA's own types.
REPLAY_COLUMNS = {
    "creationtime": "timestamp", "modificationtime": "timestamp",
    "transexitcode": "varchar(128)", "piloterrorcode": "integer",
    "piloterrordiag": "varchar(500)", "exeerrorcode": "integer",
    "jobdispatchererrorcode": "integer", "jobdispatchererrordiag": "varchar(250)",
    "ninputdatafiles": "integer", "parentid": "bigint",
}  # fmt: skip
MEMORY_CODES, WALLTIME_CODE = {1212, 1235}, 1213


@pytest.fixture(scope="module")
def frames():
    return generate_chunk(2000, seed=21)


def _retry_pairs(jobs: pd.DataFrame) -> pd.DataFrame:
    """Each failed attempt next to its retry (the retry's parentid, as PanDA's retryJob)."""
    retries = jobs.dropna(subset=["parentid"])
    return jobs.merge(
        retries, left_on="pandaid", right_on="parentid", suffixes=("", "_retry"), how="inner"
    )


def test_failed_attempts_keep_panda_error_codes(frames) -> None:
    jobs = frames.jobs
    failed = jobs[jobs["jobstatus"].eq("failed")]
    finished = jobs[jobs["jobstatus"].eq("finished")]
    assert (finished[["piloterrorcode", "jobdispatchererrorcode"]] == 0).all().all()
    assert finished["transexitcode"].eq("0").all()
    codes = set(failed["piloterrorcode"]) | set(failed["jobdispatchererrorcode"])
    assert MEMORY_CODES | {WALLTIME_CODE, 100, 1099, 1201} <= codes
    assert ((failed["piloterrorcode"] > 0) | (failed["jobdispatchererrorcode"] > 0)).all()
    assert failed["attemptnr"].eq(1).all() and (failed["nevents"] == 0).all()
    lost = failed[failed["jobdispatchererrorcode"].eq(100)]
    assert lost["jobdispatchererrordiag"].eq("lost heartbeat").all()
    pairs = _retry_pairs(jobs)
    mem = pairs[pairs["piloterrorcode"].isin(MEMORY_CODES)]
    assert (mem["maxpss"] > mem["maxpss_retry"]).mean() > 0.95  # killed above what it needs
    wall = pairs[pairs["piloterrorcode"].eq(WALLTIME_CODE)]
    f_wall = (wall["endtime"] - wall["starttime"]).dt.total_seconds()
    r_wall = (wall["endtime_retry"] - wall["starttime_retry"]).dt.total_seconds()
    assert (f_wall > r_wall).mean() > 0.95


def test_failed_attempts_never_move_the_targets(frames) -> None:
    jobs, tasks = frames.jobs, frames.tasks
    with_failures = compute_task_targets(jobs, tasks, settings=Settings())
    without = compute_task_targets(jobs[jobs["jobstatus"].eq("finished")], tasks, settings=Settings())
    pd.testing.assert_frame_equal(with_failures, without)


def test_job_clock_scouts_then_avalanche(frames) -> None:
    jobs = frames.jobs
    assert (jobs["creationtime"] <= jobs["starttime"]).all()
    assert (jobs["modificationtime"] == jobs["endtime"]).all()
    pairs = _retry_pairs(jobs)
    assert pairs["jobstatus"].eq("failed").all() and pairs["attemptnr_retry"].eq(2).all()
    assert (pairs["jeditaskid"] == pairs["jeditaskid_retry"]).all()
    assert (pairs["creationtime_retry"] >= pairs["endtime"]).all()
    # every failed attempt is retried, except the scouts of a broken task
    broken = frames.tasks.loc[frames.tasks["status"].eq("broken"), "jeditaskid"]
    unretried = jobs["jobstatus"].eq("failed") & ~jobs["pandaid"].isin(pairs["pandaid"])
    assert jobs.loc[unretried, "jeditaskid"].isin(broken).all()
    scout = jobs["specialhandling"].eq("sj")
    done = jobs["jobstatus"].eq("finished")
    scouts_end = jobs[scout & done].groupby("jeditaskid")["endtime"].max()
    others = jobs[~scout]
    assert (others["starttime"].to_numpy() >= scouts_end.loc[others["jeditaskid"]].to_numpy()).all()
    # a scout that lost its heartbeat holds the whole avalanche back by hours
    lost = jobs[scout & jobs["jobdispatchererrorcode"].eq(100)]["jeditaskid"].unique()
    wait = (
        jobs[~scout].groupby("jeditaskid")["starttime"].min()
        - frames.tasks.set_index("jeditaskid")["creationdate"]
    ).dt.total_seconds() / 3600
    lost = [t for t in lost if t in wait.index]
    assert len(lost) > 10
    assert wait.loc[lost].median() > wait.drop(lost).median() + 2.0


def test_scouts_crowd_the_first_site_and_tasks_spread_over_sites(frames) -> None:
    jobs = frames.jobs[frames.jobs["jobstatus"].eq("finished")]
    big = jobs.groupby("jeditaskid").filter(lambda g: len(g) >= 50)
    scouts = big[big["specialhandling"].eq("sj")]
    top = scouts.groupby("jeditaskid")["computingsite"].agg(lambda s: s.value_counts().iloc[0])
    assert (top / scouts.groupby("jeditaskid").size()).median() >= 0.8
    assert big.groupby("jeditaskid")["computingsite"].nunique().median() >= 3
    power = big["hs06"] / big["actualcorecount"]
    assert power.groupby(big["jeditaskid"]).nunique().median() >= 3  # CPU generations


def test_broken_tasks_have_only_failed_scouts(frames) -> None:
    broken = frames.tasks.loc[frames.tasks["status"].eq("broken"), "jeditaskid"]
    assert len(broken) >= 1
    rows = frames.jobs[frames.jobs["jeditaskid"].isin(broken)]
    assert rows["jobstatus"].eq("failed").all() and rows["specialhandling"].eq("sj").all()


def test_mechanisms_widen_the_scouts_error_and_switch_off() -> None:
    off = WithinTaskSettings(
        scout_capped_input_share=0, avalanche_resize_share=0, slots_mean=0,
        early_slot_share=0, slot_speed_sigma=0, site_speed_sigma=0, outlier_share=0,
        bad_early_site_share=0, scout_abort_share=0, few_jobs_share=0,
    )  # fmt: skip
    plain = generate_chunk(2000, seed=5, within=off)
    real_like = generate_chunk(2000, seed=5)
    assert plain.jobs["piloterrorcode"].isin(MEMORY_CODES | {WALLTIME_CODE, 1099, 1201, 0}).all()
    assert not plain.tasks["status"].eq("broken").any()
    spread = {}
    for name, f in (("off", plain), ("on", real_like)):
        ratios = scout_ratios(TaskJobs(f.jobs, f.tasks), get_settings())
        spread[name] = np.median(np.abs(np.log(ratios["walltime"].dropna())))
    assert spread["on"] > 1.5 * spread["off"], spread


def test_jobsarchived4_columns_are_pandas_own() -> None:
    path = DDL / "pg_PANDA_TABLE.sql"
    if not path.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI must check the schema against PanDA's DDL: {path} is missing")
        pytest.skip(f"PanDA DDL not found at {path}")
    text = path.read_text(errors="replace")
    body = text[text.index("CREATE TABLE jobsarchived4 (") :]
    body = body[: body.index(") PARTITION BY")]
    ddl = {
        m.group(1).lower(): m.group(2).lower()
        for m in re.finditer(r"^\s*(\w+)\s+([a-z]+(?:\(\d+(?:,\d+)?\))?)", body, re.M)
    }
    ours = {c.name: c.type for c in jobsarchived4.columns}
    assert set(ours) <= set(ddl), set(ours) - set(ddl)
    sql = {BigInteger: "bigint", Integer: "integer", DateTime: "timestamp"}
    for name, expected in REPLAY_COLUMNS.items():
        kind = ours[name]
        got = f"varchar({kind.length})" if isinstance(kind, String) else sql[type(kind)]
        assert got == expected == ddl[name], (name, got, ddl[name])


def test_bad_mechanism_settings_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="avalanche_resize_fraction"):
        WithinTaskSettings(avalanche_resize_fraction=(0.8, 0.2))
    with pytest.raises(ValueError, match="failure_cause_weights"):
        WithinTaskSettings(failure_cause_weights=(0, 0, 0))
    with pytest.raises(ValueError, match="few_jobs_share"):
        WithinTaskSettings(few_jobs_share=1.5)
