"""The job follower end to end on PanDA's own DDL (PostgreSQL) with RabbitMQ: tasks sized at
submission by the listener and applied by JEDI's plugin, their jobs ending (some failed for
memory), ``scoutless online follow`` as a process woken by job_status messages, SIGKILLed
mid-run and restarted, and a poison job message."""

from __future__ import annotations

import json
import signal
import sys
import time
import uuid
from datetime import datetime, timedelta

import pytest
from job_world import FILES_PER_JOB, add_files, add_job, file_ramcounts, follow_from, ledger
from panda_world import CLI, Proc, World, wait_for
from sqlalchemy import func, insert, select, text

from scoutless.panda import job_tables as jt
from scoutless.panda.job_outcomes import type_key
from scoutless.panda.retry_ram import ram_count_for
from scoutless.replay.ladder import job_min_ram_count
from scoutless.sizing.state_store import outcome_log

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

JOBS_PER_TASK = 60
KILLED_EVERY = 10  # every 10th job of a task fails for memory (pilot3's 1235)


def _follow(world: World, queue: str, log_name: str) -> Proc:
    args = [sys.executable, "-c", CLI, "online", "follow", "--db", world.db,
            "--broker", f"stomp://{world.broker[0]}:{world.broker[1]}",
            "--subscribe", queue, "--poll-interval", "1"]  # fmt: skip
    env = {"SCOUTLESS_JOB_FOLLOWER__PAGE_ROWS": "7", "SCOUTLESS_JOB_FOLLOWER__OVERLAP_S": "3600"}
    return Proc(args, world.tmp / log_name, env)


def _send_job_status(world: World, queue: str, pandaid: int, task: int, status: str) -> None:
    """As panda-server's push_job_status_message sends it."""
    body = {"msg_type": "job_status", "jobid": pandaid, "taskid": task, "status": status,
            "timestamp": int(time.time()), "computingsite": "E2E_SITE", "inputs": None,
            "piloterrorcode": 1235 if status == "failed" else 0}  # fmt: skip
    world.jedi.conn.send(queue, json.dumps(body), headers={"persistent": "true"})


def test_jobs_are_learnt_retries_written_once_across_a_kill_and_poison_is_dead(
    world: World,
) -> None:
    engine = world.jedi.engine
    ids = world.jedi.insert(6)
    for tid in ids:
        world.jedi.publish(tid)
    messages = world.settle(ids)
    rows = world.jedi.updated(ids)
    sized = [t for t in ids if t in rows and rows[t]["ramcount"]][:2]
    assert sized, "no task had its ramCount applied at submission"
    queue = f"/queue/test_{uuid.uuid4().hex[:8]}_jobstatus"
    with engine.begin() as conn:
        conn.execute(insert(jt.schedconfig_json).values(
            panda_queue="E2E_SITE", data={"maxrss": 64000}, last_update=datetime.now()))  # fmt: skip
    t0 = datetime.now().replace(microsecond=0) - timedelta(hours=1)
    jobs: list[tuple[int, int, str]] = []
    for k, tid in enumerate(sized):
        ram, cores = rows[tid]["ramcount"], 1
        dataset = 900_000 + k
        with engine.begin() as conn:
            conn.execute(text(
                "INSERT INTO jedi_datasets (jeditaskid, datasetid, datasetname, type, "
                "creationtime, modificationtime, status) VALUES (:t, :d, :n, 'input', now(), "
                "now(), 'ready')"), {"t": tid, "d": dataset, "n": f"e2e.{tid}"})  # fmt: skip
        add_files(engine, tid, dataset, JOBS_PER_TASK * FILES_PER_JOB)
        allowed = job_min_ram_count(ram, 0.0, cores, 0.0)
        for i in range(JOBS_PER_TASK):
            pandaid = 7_000_000_000 + tid * 1000 + i
            killed = i % KILLED_EVERY == KILLED_EVERY - 1
            status = "failed" if killed else "finished"
            seconds = (t0 - datetime(2026, 12, 1, 12)).total_seconds() + i
            add_job(engine, tid, pandaid, status=status, code=1235 if killed else 0,
                    maxpss_mb=allowed * (1.3 if killed else 0.7 + 0.003 * i),
                    minramcount=allowed, cores=cores, seconds=seconds, site="E2E_SITE")  # fmt: skip
            jobs.append((pandaid, tid, status))
    follow_from(engine, t0)  # not another module's jobs, whatever ran before
    ours = {p for p, _, _ in jobs}

    def handled_ours() -> int:  # the session's database is shared with other modules
        return len(ours & {r["pandaid"] for r in ledger(engine)})

    follower = _follow(world, queue, "follower-1.log")
    try:
        for pandaid, tid, status in jobs:
            _send_job_status(world, queue, pandaid, tid, status)
        # killed mid-run: some jobs handled, not all
        wait_for(lambda: handled_ours() >= 15, 60, "the follower to handle 15 jobs")
        follower.stop(signal.SIGKILL)
        handled_at_kill = handled_ours()
        follower = _follow(world, queue, "follower-2.log")
        world.jedi.conn.send(queue, json.dumps({"msg_type": "job_status", "jobid": 2**64,
                                                "status": "failed", "timestamp": 1}))  # fmt: skip
        wait_for(lambda: handled_ours() == len(jobs), 90, f"{len(jobs)} jobs handled")
        wait_for(lambda: _dead_letter(engine), 30, "the poison message in the dead letters")
    finally:
        follower.stop()
    assert 0 < handled_at_kill < len(jobs)  # killed mid-run
    handled = {r["pandaid"]: r for r in ledger(engine) if r["pandaid"] in ours}
    assert set(handled) == ours  # every job once (the key is the ledger's)
    for tid in sized:
        key = type_key(tid, "job")
        with engine.connect() as conn:
            learnt = conn.execute(select(func.count()).select_from(outcome_log)
                                  .where(outcome_log.c.key == key)).scalar()  # fmt: skip
        # the prior, then each job once: a restart learnt nothing twice
        assert learnt == 1 + JOBS_PER_TASK
    for pandaid, tid, status in jobs:
        row = handled[pandaid]
        assert row["mode"] == "full" and row["cause"] == ("memory" if status == "failed" else
                                                          "finished")  # fmt: skip
        if status == "failed":
            written, retry = row["file_ramcount"], json.loads(row["detail"])["retry"]
            assert written >= retry["jedi"]  # never below JEDI's step
            assert written >= ram_count_for(row["need"], 1, 0)  # past what the kill revealed
            assert file_ramcounts(engine, tid, pandaid) == [written] * FILES_PER_JOB
    assert messages  # the submission's answers were published


def _dead_letter(engine) -> bool:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        reason = conn.execute(text(
            "SELECT reason FROM scoutless_dead_letters WHERE body LIKE '%18446744073709551616%'"
        )).scalar()  # fmt: skip
    return reason is not None and reason.startswith("malformed")
