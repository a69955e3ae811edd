"""The job follower's time and forgetting on a small PanDA in SQLite: each job's HS06·s per
event learnt (a time-limit kill a lower bound, an unknown failure nothing), the task's
cpuTime and walltime re-tuned as JEDI does (its units, never a Fixed unit, never below
JEDI's raise), shadow writing nothing, a finished task forgotten with its ledger shown."""

from __future__ import annotations

import math
from datetime import datetime

import orjson
import pytest
from job_world import add_job, add_queue, add_task, create_world, ledger, task_columns
from sqlalchemy import update

from scoutless.config import Settings
from scoutless.history.panda_db import make_engine
from scoutless.history.schema import jedi_tasks
from scoutless.panda import job_outcomes as jo
from scoutless.panda import job_tables as jt
from scoutless.panda import job_times as jtm
from scoutless.panda.job_follower import JobFollower
from scoutless.panda.job_reads import Task

#: add_job's jobs run 2 h; at corePower 10, one core, 100 % efficiency, no baseWalltime, a
#: job of N events took 7200 × 10 / N HS06·s per event
RUN_S, POWER = 7200, 10.0


def _events(per_event: float) -> int:
    return round(RUN_S * POWER / per_event)


def _task(**kw) -> Task:  # type: ignore[no-untyped-def]
    base = {"ramcount": 2000.0, "ramunit": "MBPerCore", "base_mb": 0.0, "cores": 1.0,
            "splitrule": None, "status": "running", "cpu_efficiency": 100.0}  # fmt: skip
    return Task(**(base | kw))


def _row(**kw) -> jo.JobRow:  # type: ignore[no-untyped-def]
    base = {"pandaid": 1, "jeditaskid": 7, "attemptnr": 1, "jobstatus": "finished",
            "modificationtime": datetime(2026, 1, 1, 2), "starttime": datetime(2026, 1, 1),
            "endtime": datetime(2026, 1, 1, 2), "nevents": 200.0}  # fmt: skip
    return jo.JobRow(**(base | kw))


# ---------------------------------------------------------------- by hand
def test_a_jobs_hs06_seconds_per_event_is_jedis() -> None:
    # getHS06sec: (7200 − 600) × 10 × 4 cores × 0.8 / 400 events = 528
    task = _task(base_walltime_s=600.0, cpu_efficiency=80.0)
    row = _row(corecount=4, nevents=400.0)
    assert jtm.hs06_per_event(row, task, 10.0) == pytest.approx(528)
    assert jtm.hs06_per_event(row, task, None) == pytest.approx(528)  # JEDI's default 10
    # under 10 events per core and a run under 6 h: JEDI keeps no cpuTime of it
    assert jtm.hs06_per_event(_row(corecount=4, nevents=39.0), task, 10.0) is None


def test_jedis_retry_of_a_time_limit_kill_is_the_queue_maxtime_per_event() -> None:
    # (48 h − 600 s) × corePower 10 × 4 cores × 0.8 / 400 events
    task = _task(base_walltime_s=600.0, cpu_efficiency=80.0)
    row = _row(corecount=4, nevents=400.0)
    assert jtm.retry_limit(row, task, 172_800.0, 10.0) == pytest.approx(13_776.0)
    assert jtm.retry_limit(row, task, 172_800.0, None) == pytest.approx(13_776.0)
    assert math.isnan(jtm.retry_limit(row, task, None, 10.0))  # no maxtime: the sizer's own
    assert math.isnan(jtm.retry_limit(_row(nevents=None), task, 172_800.0, 10.0))


def test_a_time_limit_kill_is_a_lower_bound_and_an_unknown_failure_nothing() -> None:
    task = _task()
    ok = jtm.time_outcome(_row(), jo.Cause.FINISHED, task, POWER)
    assert ok is not None and not ok.censored and ok.need == pytest.approx(360)
    killed = _row(jobstatus="failed", piloterrorcode=1213)  # REACHEDMAXTIME
    assert jo.cause(killed) is jo.Cause.WALLTIME
    bound = jtm.time_outcome(killed, jo.cause(killed), task, POWER)
    assert bound is not None and bound.censored and bound.need == pytest.approx(360)
    unknown = _row(jobstatus="failed", piloterrorcode=1201)  # SIGTERM: any cause
    assert jtm.time_outcome(unknown, jo.cause(unknown), task, POWER) is None
    memory = _row(jobstatus="failed", piloterrorcode=1235)  # its run says little of its length
    assert jtm.time_outcome(memory, jo.cause(memory), task, POWER) is None


def test_cputime_updates_in_jedis_units_never_fixed_never_below_the_floor() -> None:
    hs06 = _task(cputime=100.0, cputimeunit="HS06sPerEvent")
    assert jtm.cpu_time_update(361.2, hs06, 0.0, 0.05) == (362, "HS06sPerEvent")
    assert jtm.cpu_time_update(361.2, hs06, 2000.0, 0.05) == (2000, "HS06sPerEvent")
    assert jtm.cpu_time_update(103.0, hs06, 0.0, 0.05) is None  # within 5 %
    # below 10 HS06·s per event: mHS06sPerEvent, × 1000 (getScoutJobData_JEDI)
    assert jtm.cpu_time_update(3.2, hs06, 0.0, 0.05) == (3200, "mHS06sPerEvent")
    milli = _task(cputime=5000.0, cputimeunit="mHS06sPerEvent")
    assert jtm.per_event(milli) == 5.0 and jtm.cpu_time_update(12.1, milli, 0, 0.05) == (
        13, "HS06sPerEvent")  # fmt: skip
    # no unit (read as HS06sPerEvent): none written at 10 or more, as JEDI
    assert jtm.cpu_time_update(361.2, _task(cputime=100.0), 0.0, 0.05) == (362, None)
    for fixed in ("HS06sPerEventFixed", "mHS06sPerEventFixed"):
        assert jtm.cpu_time_update(361.2, _task(cputime=100.0, cputimeunit=fixed), 0, 0) is None


def test_the_task_walltime_is_jedis_and_never_lowered() -> None:
    # the largest cpuConsumptionTime 7000 s over the largest input 1000 bytes × 1.5 → 11
    assert jtm.walltime_update(7000.0, 1000.0, None) == 11
    assert jtm.walltime_update(7000.0, 1000.0, 20.0) is None  # the task's is larger
    assert jtm.walltime_update(3000.0, 1000.0, None) is None  # under an hour: 0
    assert jtm.walltime_update(7000.0, 0.0, None) is None


# ---------------------------------------------------------------- the follower
@pytest.fixture
def engine(tmp_path):  # type: ignore[no-untyped-def]
    engine = make_engine(f"sqlite:///{tmp_path / 'panda.db'}")
    create_world(engine)
    add_queue(engine, "SITE_A", 64000, corepower=POWER)
    yield engine
    engine.dispose()


def _follower(engine, **follower) -> JobFollower:  # type: ignore[no-untyped-def]
    settings = Settings()
    changed = settings.job_follower.model_copy(update={"forget_check_s": 0.0} | follower)
    return JobFollower(engine, settings.model_copy(update={"job_follower": changed}))


def _jobs(engine, task: int, first: int, n: int, per_event: float, **kw) -> None:  # type: ignore[no-untyped-def]
    for i in range(n):
        add_job(engine, task, first + i, seconds=first + i, nevents=_events(per_event), **kw)


def test_the_task_cputime_follows_its_jobs_and_keeps_jedis_raise(engine) -> None:  # type: ignore[no-untyped-def]
    add_task(engine, 7, cputime=100, cputimeunit="HS06sPerEvent")
    _jobs(engine, 7, 100, 8, 360.0, cpu_s=7000, input_bytes=1000)
    _jobs(engine, 7, 150, 1, 360.0, cpu_s=2000, input_bytes=100)  # its ratio alone: 30
    follower = _follower(engine)
    assert follower.poll() == 9
    cputime, unit, walltime = task_columns(engine, 7, "cputime", "cputimeunit", "walltime")
    # walltime: the largest CPU time 7000 s over the largest input 1000 bytes × 1.5 → 11
    assert unit == "HS06sPerEvent" and 360 <= cputime < 380 and walltime == 11
    assert follower.sizer.versions[jtm.time_key(7, "job")] == 1 + 9  # the prior, 9 runs
    assert follower.counts["time_writes"] >= 1
    with engine.begin() as conn:  # JEDI re-tunes it to 2000: never lowered
        conn.execute(update(jedi_tasks).where(jedi_tasks.c.jeditaskid == 7).values(cputime=2000))
    _jobs(engine, 7, 200, 20, 300.0)
    follower.poll()
    assert task_columns(engine, 7, "cputime", "cputimeunit") == (2000, "HS06sPerEvent")


@pytest.mark.parametrize("maxtime", [None, 172_800])
def test_a_kill_is_priced_with_jedis_retry_at_the_queue_maxtime(tmp_path, maxtime) -> None:  # type: ignore[no-untyped-def]
    """Nine jobs of 360 HS06·s per event and one of 1,800: with no maxtime known the
    cpuTime risks the long one's kill (the sizer's own retry would follow close above);
    where a kill's retry runs at a 48-hour maxtime, it covers the long job."""
    engine = make_engine(f"sqlite:///{tmp_path / 'panda.db'}")
    create_world(engine)
    add_queue(engine, "SITE_A", 64000, corepower=POWER, maxtime_s=maxtime)
    add_task(engine, 7, cputime=100, cputimeunit="HS06sPerEvent")
    for i, per_event in enumerate([360.0] * 9 + [1800.0]):
        add_job(engine, 7, 100 + i, seconds=100 + i, nevents=_events(per_event))
    _follower(engine).poll()
    cputime = task_columns(engine, 7, "cputime")[0]
    assert (cputime < 1800) if maxtime is None else (cputime >= 1800)
    engine.dispose()


def test_a_time_limit_kill_is_learnt_as_a_bound_an_unknown_failure_is_not(engine) -> None:  # type: ignore[no-untyped-def]
    add_task(engine, 7, cputime=100, cputimeunit="HS06sPerEvent")
    _jobs(engine, 7, 100, 1, 360.0, status="failed", code=1213, maxpss_mb=None)
    _jobs(engine, 7, 200, 1, 360.0, status="failed", code=1201, maxpss_mb=None)
    follower = _follower(engine)
    assert follower.poll() == 2
    rows = {r["pandaid"]: r for r in ledger(engine)}
    killed = orjson.loads(rows[100]["detail"])["time"]
    assert rows[100]["cause"] == "walltime" and killed["bound"] and killed["need"] == 360
    assert rows[200]["cause"] == "other" and orjson.loads(rows[200]["detail"]) == {}
    assert follower.sizer.versions[jtm.time_key(7, "job")] == 1 + 1
    (_, _, outcome) = follower.sizer.store.outcomes(jtm.time_key(7, "job"))[-1]
    assert outcome["censored"] is True


def test_a_fixed_cputime_is_learnt_and_never_written(engine) -> None:  # type: ignore[no-untyped-def]
    add_task(engine, 7, cputime=100, cputimeunit="HS06sPerEventFixed")
    _jobs(engine, 7, 100, 8, 360.0)
    _follower(engine).poll()
    assert task_columns(engine, 7, "cputime", "cputimeunit") == (100, "HS06sPerEventFixed")


def test_shadow_decides_the_times_and_writes_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(f"sqlite:///{tmp_path / 'shadow.db'}")
    create_world(engine, mode="shadow")
    add_queue(engine, "SITE_A", 64000, corepower=POWER)
    add_task(engine, 7, cputime=100, cputimeunit="HS06sPerEvent")
    _jobs(engine, 7, 100, 8, 360.0, cpu_s=7000, input_bytes=1000)
    follower = _follower(engine)
    follower.poll()
    assert task_columns(engine, 7, "cputime", "walltime") == (100, None)
    decided = orjson.loads(ledger(engine)[-1]["detail"])["time"]
    assert decided["cputime"] >= 360 and decided["walltime"] == 11 and not decided["written"]
    assert follower.counts["time_writes"] == 0
    engine.dispose()


def test_a_finished_task_is_forgotten_and_its_ledger_still_shown(engine) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from scoutless.cli.main import app

    add_task(engine, 7, cputime=100, cputimeunit="HS06sPerEvent")
    add_task(engine, 8)
    _jobs(engine, 7, 100, 6, 360.0)
    _jobs(engine, 8, 300, 2, 360.0)
    follower = _follower(engine)
    assert follower.poll() == 8
    with engine.begin() as conn:
        conn.execute(update(jedi_tasks).where(jedi_tasks.c.jeditaskid == 7).values(status="done"))
    _jobs(engine, 7, 400, 3, 360.0)  # its last jobs, archived after it ended: not read
    assert follower.poll() == 0 and follower.counts["forgotten"] == 1
    assert not any(jo.task_of(k) == 7 for k in follower.sizer.versions)
    assert any(jo.task_of(k) == 8 for k in follower.sizer.versions)
    restarted = _follower(engine)  # a restart restores none of its types
    assert not any(jo.task_of(k) == 7 for k in restarted.sizer.versions)
    assert jtm.time_key(7, "job") in restarted.sizer.skipped and restarted.poll() == 0
    result = CliRunner().invoke(app, ["online", "status", "7", "--db", str(engine.url)])
    assert result.exit_code == 0, result.output
    assert "forgotten (done)" in result.output and "latest 6 jobs handled" in result.output
    assert "walltime" in result.output and "HS06sPerEvent" in result.output


def test_an_idle_task_is_forgotten_after_the_idle_time(engine) -> None:  # type: ignore[no-untyped-def]
    add_task(engine, 7)
    _jobs(engine, 7, 100, 2, 360.0)
    _follower(engine).poll()
    assert _follower(engine, forget_idle_s=3600.0).forget_ended() == []  # handled just now
    with engine.begin() as conn:  # an hour and more ago
        conn.execute(update(jt.ledger).values(handled_at=datetime(2020, 1, 1)))
    assert _follower(engine, forget_idle_s=3600.0).forget_ended() == [7]


@pytest.mark.parametrize("grace", [False, True])
def test_the_follower_prices_a_memory_kill_as_the_replay_online_strategy_does(grace: bool) -> None:
    """The follower sizes memory in MB per core: its kill is the replay's kill price in
    those units (not the sizing penalty, whose floor is in bytes), so the replay measures
    what the follower does — the site's kill rule too, where it is asked for
    (``allocation.memory_kill_grace``); walltime keeps its own price."""
    from scoutless.replay.traces import MB, kill_price
    from scoutless.sizing.features import Release

    settings = Settings()
    settings = settings.model_copy(update={
        "allocation": settings.allocation.model_copy(update={"memory_kill_grace": grace})})  # fmt: skip
    sizer = jtm.follower_sizer(settings)
    for cores in (1.0, 8.0):
        f = Release(cores=cores)
        assert sizer.sizer.failure_price(f) == kill_price(settings, MB)(f)
        assert sizer.sizer.failure_price(f).fixed < 10_000  # MB per core, not bytes
        assert sizer.sizer.failure_price(f).grace == (
            settings.replay.memory_kill_factor if grace else 1.0
        )
    walltime = sizer._of(jtm.time_key(1, "job"))
    assert walltime is not sizer.sizer and walltime.failure_price is not None
