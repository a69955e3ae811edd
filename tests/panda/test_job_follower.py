"""The job follower on a small PanDA in SQLite: what a job row teaches, a retry's ramCount
from a hand-worked case, JEDI's raise never lowered, shadow, duplicates, late rows, restarts."""

from __future__ import annotations

import math
from datetime import datetime

import pytest
from job_world import (
    add_job,
    add_queue,
    add_task,
    create_world,
    file_ramcounts,
    ledger,
    task_ramcount,
)
from sqlalchemy import update

from scoutless.config import Settings
from scoutless.history.panda_db import make_engine
from scoutless.history.schema import jedi_tasks
from scoutless.panda import job_outcomes as jo
from scoutless.panda.job_follower import JobFollower
from scoutless.panda.retry_ram import (
    ram_count_for,
    retry_ram_count,
    task_floor,
    task_ram_update,
)
from scoutless.replay.ladder import job_min_ram_count


def _row(**kw) -> jo.JobRow:  # type: ignore[no-untyped-def]
    base = {"pandaid": 1, "jeditaskid": 7, "attemptnr": 1, "jobstatus": "failed",
            "modificationtime": datetime(2026, 1, 1)}  # fmt: skip
    return jo.JobRow(**(base | kw))


# ---------------------------------------------------------------- classification
@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({"jobstatus": "finished"}, jo.Cause.FINISHED),
        ({"piloterrorcode": 1212}, jo.Cause.MEMORY),  # PAYLOADOUTOFMEMORY
        ({"piloterrorcode": 1235}, jo.Cause.MEMORY),  # PAYLOADEXCEEDMAXMEM
        ({"piloterrorcode": 1234}, jo.Cause.OTHER),  # EXECUTEDCLONEJOB: not memory
        ({"piloterrorcode": 1213}, jo.Cause.WALLTIME),  # REACHEDMAXTIME: not memory
        ({"piloterrorcode": 1204}, jo.Cause.WALLTIME),  # SIGXCPU: the batch's time limit
        ({"piloterrorcode": 1201}, jo.Cause.OTHER),  # SIGTERM: any cause, never a bound
        (
            {"transexitcode": "137", "piloterrordiag": "Memory cgroup out of memory: Killed"},
            jo.Cause.MEMORY,
        ),  # the batch system's OOM kill
        ({"transexitcode": "137"}, jo.Cause.OTHER),  # any SIGKILL: unknown, never a bound
        ({"jobstatus": "cancelled", "piloterrorcode": 1212}, jo.Cause.OTHER),
    ],
)
def test_memory_failures_are_what_the_pilot_says_and_nothing_else(kw, expected) -> None:  # type: ignore[no-untyped-def]
    assert jo.cause(_row(**kw)) is expected


def test_an_unknown_failure_teaches_nothing_and_a_memory_kill_is_a_lower_bound() -> None:
    assert jo.outcome(_row(piloterrorcode=1099, maxpss_kb=4e6), base_mb=0) is None
    killed = jo.outcome(_row(piloterrorcode=1235, maxpss_kb=2500 * 1024, minramcount_mb=1800,
                             corecount=1), base_mb=0)  # fmt: skip
    assert killed is not None and killed.censored and killed.need == pytest.approx(2500)
    # no maxPSS recorded: the bound is what it was allowed (the pilot's limit starts there)
    blind = jo.outcome(_row(piloterrorcode=1212, minramcount_mb=3600, corecount=2), base_mb=0)
    assert blind is not None and blind.censored and blind.need == pytest.approx(1800)
    ok = jo.outcome(_row(jobstatus="finished", maxpss_kb=8000 * 1024, corecount=4), base_mb=0)
    assert ok is not None and not ok.censored and ok.need == pytest.approx(2000)


def test_scouts_and_merges_are_their_own_types() -> None:
    assert jo.job_kind(_row(specialhandling="pc,sj")) == "scout"
    assert jo.job_kind(_row(specialhandling="pm")) == "merge"
    assert jo.job_kind(_row(processingtype="pmerge")) == "merge"
    assert jo.job_kind(_row(specialhandling="pc")) == "job"


# ---------------------------------------------------------------- the retry's ramCount
def test_a_retry_ramcount_worked_by_hand() -> None:
    # 8 cores, no base: a need of 3500 MB/core is 28,000 MB for the job; JEDI's minRamCount
    # is int(0.9 × ramCount × 8), so ramCount = ceil(28000 / 0.9 / 8) = 3889 (int(28000.8))
    assert ram_count_for(3500, 8, 0) == 3889
    assert job_min_ram_count(3889, 0, 8, 0) >= 28000 > job_min_ram_count(3888, 0, 8, 0)
    # JEDI's ladder for a job at minRamCount 14400 (= int(0.9 × 2000 × 8)): 2000 → 3000
    free = retry_ram_count(3500, 8, 0, maxrss_mb=None, split_rule=None, jedi=3000)
    assert free.written == 3889
    # the queue's maxrss 24000 MB caps it at floor(24000 / 0.9 / 8) = 3333
    capped = retry_ram_count(3500, 8, 0, maxrss_mb=24000, split_rule=None, jedi=3000)
    assert capped.written == 3333
    # RZ=20000 (MB per job) caps at 2500 per core, below JEDI's step: JEDI's 3000 stands
    rz = retry_ram_count(3500, 8, 0, maxrss_mb=None, split_rule="RZ=20000", jedi=3000)
    assert rz.written == 3000
    # a sizer with no answer: JEDI's step
    assert (
        retry_ram_count(math.nan, 8, 0, maxrss_mb=None, split_rule=None, jedi=3000).written == 3000
    )


def test_the_task_ramcount_never_lowers_what_jedi_raised() -> None:
    # we wrote 2000, JEDI raised it to 3000: the floor is 3000, a posterior at 2500 leaves it
    floor = task_floor(3000, 2000, None)
    assert floor == 3000 and task_ram_update(2500, 3000, floor, "MBPerCore", 0.05) is None
    # then we raised it to 5000 ourselves: coming down, it stops at JEDI's 3000
    floor = task_floor(5000, 5000, floor)
    assert task_ram_update(2500, 5000, floor, "MBPerCore", 0.05) == 3000
    # our own 3000, nothing raised by JEDI, may come down to 2500
    assert task_ram_update(2500, 3000, task_floor(3000, 3000, None), "MBPerCore", 0.05) == 2500
    assert task_ram_update(3600, 3000, 3000, "MBPerCoreFixed", 0.05) is None
    assert task_ram_update(3050, 3000, 0, "MBPerCore", 0.05) is None  # within 5 %


# ---------------------------------------------------------------- the follower
@pytest.fixture
def engine(tmp_path):  # type: ignore[no-untyped-def]
    engine = make_engine(f"sqlite:///{tmp_path / 'panda.db'}")
    create_world(engine)
    yield engine
    engine.dispose()


def _follower(engine, **follower) -> JobFollower:  # type: ignore[no-untyped-def]
    settings = Settings()
    if follower:
        changed = settings.job_follower.model_copy(update=follower)
        settings = settings.model_copy(update={"job_follower": changed})
    return JobFollower(engine, settings)


def test_memory_failures_get_their_retry_ramcount_and_finished_jobs_teach(engine) -> None:  # type: ignore[no-untyped-def]
    add_task(engine, 7, ramcount=2000)
    add_queue(engine, "SITE_A", 64000)
    for i in range(6):
        add_job(engine, 7, 100 + i, maxpss_mb=1700 + 20 * i, seconds=i)
    # allowed int(0.9 × 2000) = 1800 MB; reached 2600: killed by the pilot (1235)
    add_job(engine, 7, 200, status="failed", code=1235, maxpss_mb=2600, seconds=10)
    add_job(engine, 7, 201, status="failed", code=1099, maxpss_mb=5000, seconds=11)
    follower = _follower(engine)
    assert follower.poll() == 8
    rows = {r["pandaid"]: r for r in ledger(engine)}
    killed = rows[200]
    assert killed["cause"] == "memory" and killed["need"] == pytest.approx(2600)
    # at least JEDI's step above the job's 2000 (3000), at least what the kill revealed
    assert killed["file_ramcount"] >= 3000
    assert job_min_ram_count(killed["file_ramcount"], 0, 1, 0) >= 2600
    assert file_ramcounts(engine, 7, 200) == [killed["file_ramcount"]] * 2
    assert rows[201]["cause"] == "other" and rows[201]["need"] is None  # never a bound
    assert file_ramcounts(engine, 7, 201) == [0, 0]
    assert follower.sizer.versions["panda:7:job"] == 1 + 7  # the prior, 6 successes, 1 bound


def test_duplicates_late_rows_and_a_restart_handle_each_job_once(engine) -> None:  # type: ignore[no-untyped-def]
    add_task(engine, 7)
    for i in range(4):
        add_job(engine, 7, 100 + i, seconds=100 + i, table="jobsactive4")
    follower = _follower(engine, sweep_interval_s=0)  # every read sweeps the overlap
    assert follower.poll() == 4
    # archived: the same jobs again in jobsarchived4 (PanDA moves them), plus a row
    # committed late with an older modificationtime than the mark (within the overlap)
    for i in range(4):
        add_job(engine, 7, 100 + i, seconds=200 + i, files=False)
    add_job(engine, 7, 150, seconds=50, table="jobsactive4")
    assert follower.poll() == 1
    version = follower.sizer.versions["panda:7:job"]
    again = _follower(engine)  # a restart: state from the database, nothing handled twice
    assert again.poll() == 0
    assert again.sizer.versions["panda:7:job"] == version == 1 + 5
    assert len(ledger(engine)) == 5


def test_scouts_are_learnt_apart_and_jedi_raise_is_kept(engine) -> None:  # type: ignore[no-untyped-def]
    add_task(engine, 7, ramcount=2000)
    add_job(engine, 7, 90, specialhandling="sj", maxpss_mb=1000)
    with engine.begin() as conn:  # JEDI raised the task to 4000 (the 30 % rule)
        conn.execute(update(jedi_tasks).where(jedi_tasks.c.jeditaskid == 7).values(ramcount=4000))
    for i in range(30):
        add_job(engine, 7, 100 + i, maxpss_mb=900 + i, seconds=1 + i)
    follower = _follower(engine)
    follower.poll()
    assert "panda:7:scout" in follower.sizer.versions
    assert follower.sizer.versions["panda:7:job"] == 1 + 30
    assert task_ramcount(engine, 7) == 4000  # far below it, yet never lowered


def test_shadow_learns_and_writes_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(f"sqlite:///{tmp_path / 'shadow.db'}")
    create_world(engine, mode="shadow")
    add_task(engine, 7, ramcount=2000)
    for i in range(12):
        add_job(engine, 7, 100 + i, maxpss_mb=3000 + i, seconds=i)
    add_job(engine, 7, 200, status="failed", code=1212, maxpss_mb=3500, seconds=20)
    follower = _follower(engine)
    assert follower.poll() == 13
    rows = ledger(engine)
    assert {r["mode"] for r in rows} == {"shadow"}
    assert rows[-1]["file_ramcount"] >= 3000  # what it would have written, recorded
    assert file_ramcounts(engine, 7, 200) == [0, 0]
    assert task_ramcount(engine, 7) == 2000
    assert follower.counts["retries_written"] == follower.counts["task_writes"] == 0
    engine.dispose()


def test_a_control_arm_task_is_not_written(engine) -> None:  # type: ignore[no-untyped-def]
    add_task(engine, 8, arm="control")
    add_job(engine, 8, 300, status="failed", code=1235, maxpss_mb=2600)
    _follower(engine).poll()
    assert file_ramcounts(engine, 8, 300) == [0, 0]
    assert ledger(engine)[0]["mode"] == "shadow"


def test_the_task_ramcount_follows_its_jobs_up_and_back_down_to_its_floor(engine) -> None:  # type: ignore[no-untyped-def]
    add_task(engine, 7, ramcount=2000)
    for i in range(8):  # the jobs need ~2600 MB where 2000 was asked: the posterior moves up
        add_job(engine, 7, 100 + i, maxpss_mb=2600 + 10 * i, seconds=i)
    follower = _follower(engine)
    follower.poll()
    raised = task_ramcount(engine, 7)
    assert raised > 2600 and follower.counts["task_writes"] >= 1
    for i in range(60):  # then far below: it comes down, never below the submission's 2000
        add_job(engine, 7, 200 + i, maxpss_mb=800 + i, seconds=100 + i)
    follower.poll()
    assert 2000 <= task_ramcount(engine, 7) < raised


def test_online_status_shows_the_task_state_and_its_writes(engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from scoutless.cli.main import app

    add_task(engine, 7, ramcount=2000)
    for i in range(6):
        add_job(engine, 7, 100 + i, maxpss_mb=1700 + 20 * i, seconds=i)
    add_job(engine, 7, 200, status="failed", code=1235, maxpss_mb=2600, seconds=10)
    _follower(engine).poll()
    url = str(engine.url)
    result = CliRunner().invoke(app, ["online", "status", "7", "--db", url])
    assert result.exit_code == 0, result.output
    assert "online state per job kind" in result.output and "memory" in result.output
    row = next(line for line in result.output.splitlines() if "│ job" in line)
    assert "7 " in row and "1 " in row  # 7 outcomes learnt, 1 of them a bound
    missing = CliRunner().invoke(app, ["online", "status", "8", "--db", url])
    assert missing.exit_code == 0 and "no job of it followed yet" in missing.output


def test_a_poison_job_row_is_ledgered_as_an_error_and_the_rest_go_on(engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    add_task(engine, 7)
    for i in range(3):
        add_job(engine, 7, 100 + i, seconds=i)
    follower = _follower(engine)
    handle = follower.handle

    def poisoned(row, mode):  # type: ignore[no-untyped-def]
        if row.pandaid == 101:
            raise ValueError("a value this job row holds breaks the follower")
        return handle(row, mode)

    monkeypatch.setattr(follower, "handle", poisoned)
    for _ in range(follower.s.row_attempts - 1):  # retried at each poll, the others wait
        with pytest.raises(ValueError):
            follower.poll()
    assert follower.poll() == 2  # then ledgered as an error; 102 goes through
    causes = {r["pandaid"]: r["cause"] for r in ledger(engine)}
    assert causes == {100: "finished", 101: "error", 102: "finished"}


def test_job_messages_trigger_a_read_and_a_poison_one_is_a_dead_letter(engine) -> None:  # type: ignore[no-untyped-def]
    import json
    import time

    from scoutless.panda import dead_letters
    from scoutless.panda.broker import Frame
    from scoutless.panda.job_trigger import JobTrigger

    trigger = JobTrigger(_follower(engine), broker=None)
    now = int(time.time())

    def frame(body: dict | str) -> Frame:  # type: ignore[type-arg]
        return Frame(body if isinstance(body, str) else json.dumps(body), {}, 0)

    ended = {"msg_type": "job_status", "jobid": 5, "taskid": 7, "status": "failed",
             "timestamp": now, "piloterrorcode": 1235}  # fmt: skip
    running = ended | {"status": "running"}
    # a duplicate and an older message after a newer one: each only wakes a read
    woke, keep = trigger.triage([frame(ended), frame(ended), frame(running | {"timestamp": 1})])
    assert woke and len(keep) == 3
    assert trigger.triage([frame(running)]) == (False, [frame(running)])
    poison = [frame("not json"), frame(ended | {"jobid": 2**64}), frame(ended | {"status": None})]
    assert trigger.triage(poison) == (False, [])
    assert dead_letters.counts(engine) == {"malformed": 3}


def test_a_task_in_mb_per_job_is_learnt_and_left_to_jedi(engine) -> None:  # type: ignore[no-untyped-def]
    add_task(engine, 9, ramunit="MB", ramcount=4000, cores=2)
    add_job(engine, 9, 400, status="failed", code=1212, maxpss_mb=5000, cores=2)
    _follower(engine).poll()
    (row,) = ledger(engine)
    assert row["cause"] == "memory" and row["file_ramcount"] is None
    assert "MB per core only" in row["detail"] and file_ramcounts(engine, 9, 400) == [0, 0]


def test_a_task_prior_puts_its_ramcount_at_the_p90() -> None:
    import numpy as np

    # ramCount 2000 per core, 4 cores, base 1000: the job is allowed int(0.9 × 9000) = 8100
    # MB, (8100 − 1000) / 4 = 1775 MB per core above the base
    needs = jo.prior_needs(2000, 4, 1000, 1000, 0.2)
    assert np.quantile(needs, 0.9) == pytest.approx(1775, rel=0.01)
    assert np.median(needs) == pytest.approx(1775 * math.exp(-0.2 * 1.2816), rel=0.01)
