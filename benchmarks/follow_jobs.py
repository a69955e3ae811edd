"""The job follower under load: a job row committed (and its job_status message sent) → the
follower's ledger row and its writes committed, on PanDA's DDL.

Tasks sized at submission are put in ``jedi_tasks`` (ramCount set, the prediction logged in
the ``full`` arm) with their input files; ended jobs are inserted into ``jobsarchived4`` at
a fixed rate (every ``--kill-every``-th failed for memory, pilot3's 1235, its retry's
ramCount written into ``jedi_dataset_contents``), each followed by its job_status message as
panda-server's ``push_job_status_message`` sends it. ``scoutless online follow`` runs as a
subprocess, woken by the messages (phase ``messages``; its poll interval 30 s), then a second
one with no broker polling every ``--poll-interval`` s (phase ``polling``). Prints JSON: per
phase p50/p90/p99/max seconds from the row's commit to its ledger row (the ledger row, the
learnt outcome and the ramCount writes commit in one transaction: ``handled_at`` is taken
just before that commit), jobs lost (not handled) and duplicated.

    python benchmarks/follow_jobs.py [--rate 20] [--seconds 30] [--db URL] [--broker URL]
                                     [--out results/follow_jobs.json]

Needs PostgreSQL and RabbitMQ with STOMP (``scripts/services.sh``); ``--db`` is emptied and
reloaded with PanDA's schema.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import stomp
from sqlalchemy import func, insert, select

from record import add_out, emit, reference_loop_s
from scoutless.history.panda_db import make_engine
from scoutless.history.schema import jedi_datasets, jedi_tasks
from scoutless.ops.prediction_log import PredictionLog, predictions_table, utcnow
from scoutless.ops.rollout import set_rollout
from scoutless.panda import job_tables as jt
from scoutless.panda.broker import parse_broker_url
from scoutless.panda.ddl import load_panda_ddl

DEFAULT_DB = "postgresql+psycopg://postgres@127.0.0.1:54329/scoutless_panda"
CLI = "from scoutless.cli.main import app; app()"
FILES_PER_JOB = 2


def make_tasks(engine, n_tasks: int, files: int) -> list[int]:  # type: ignore[no-untyped-def]
    """Tasks as the listener and JEDI's plugin leave them: ramCount set, prediction logged."""
    PredictionLog(engine)
    jt.follower_metadata.create_all(engine)
    set_rollout(engine, "full", seed=0, reason="benchmark", changed_by="benchmark")
    now, ids = utcnow(), list(range(1_000_001, 1_000_001 + n_tasks))
    with engine.begin() as conn:
        for tid in ids:
            conn.execute(insert(jedi_tasks).values(
                jeditaskid=tid, username="bench", status="running", creationdate=now,
                modificationtime=now, ramcount=2000, ramunit="MBPerCore", corecount=1,
                baseramcount=0, splitrule="PC=1,US=1"))  # fmt: skip
            conn.execute(insert(jedi_datasets).values(
                jeditaskid=tid, datasetid=1, datasetname=f"in.{tid}", type="input",
                creationtime=now, modificationtime=now))  # fmt: skip
            conn.execute(insert(jt.jedi_dataset_contents), [
                {"jeditaskid": tid, "datasetid": 1, "fileid": f, "creationdate": now,
                 "lfn": f"f{tid}.{f}", "type": "input", "status": "ready", "ramcount": 0}
                for f in range(files)])  # fmt: skip
            conn.execute(insert(predictions_table).values(
                request_id=f"bench{tid}", jeditaskid=tid, model_version="bench",
                policy="risk", predictions="{}", created_at=now, arm="full"))  # fmt: skip
    return ids


def insert_job(engine, tid: int, pandaid: int, i: int, killed: bool, files: int) -> None:  # type: ignore[no-untyped-def]
    now = utcnow()
    allowed = 1800  # int(0.9 × 2000)
    with engine.begin() as conn:
        conn.execute(insert(jt.jobsarchived4).values(
            pandaid=pandaid, modificationtime=now, jeditaskid=tid, attemptnr=1,
            jobstatus="failed" if killed else "finished",
            maxpss=int(allowed * (1.3 if killed else 0.6 + 0.004 * (i % 50)) * 1024),
            minramcount=allowed, corecount=1, starttime=now - timedelta(hours=1), endtime=now,
            piloterrorcode=1235 if killed else 0, computingsite="BENCH"))  # fmt: skip
        conn.execute(insert(jt.filestable4), [
            {"row_id": pandaid * 10 + k, "pandaid": pandaid, "modificationtime": now,
             "type": "input", "jeditaskid": tid, "datasetid": 1,
             "fileid": (i * FILES_PER_JOB + k) % files}
            for k in range(FILES_PER_JOB)])  # fmt: skip


def run_phase(engine, args, ids: list[int], first_pandaid: int, broker: str | None,  # type: ignore[no-untyped-def]
              tmp: Path, name: str) -> dict:  # fmt: skip
    queue = f"/queue/bench_{uuid.uuid4().hex[:8]}_jobstatus"
    cmd = [sys.executable, "-c", CLI, "online", "follow", "--db", args.db,
           "--poll-interval", "30" if broker else str(args.poll_interval)]  # fmt: skip
    if broker:
        cmd += ["--broker", broker, "--subscribe", queue]
    log = open(tmp / f"follower-{name}.log", "ab")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    conn = None
    if broker:
        conn = stomp.Connection12([parse_broker_url(broker)], vhost="/")
        conn.connect(wait=True)
    time.sleep(3.0)  # the follower connected and read its state
    n, sent = int(args.rate * args.seconds), {}
    began = time.monotonic()
    for i in range(n):
        target = began + i / args.rate
        time.sleep(max(0.0, target - time.monotonic()))
        tid, pandaid = ids[i % len(ids)], first_pandaid + i
        killed = i % args.kill_every == args.kill_every - 1
        insert_job(engine, tid, pandaid, i, killed, args.files)
        sent[pandaid] = utcnow()
        if conn is not None:
            body = {"msg_type": "job_status", "jobid": pandaid, "taskid": tid,
                    "status": "failed" if killed else "finished",
                    "timestamp": int(time.time()), "computingsite": "BENCH", "inputs": None,
                    "piloterrorcode": 1235 if killed else 0}  # fmt: skip
            conn.send(queue, json.dumps(body), headers={"persistent": "true"})
    deadline = time.monotonic() + 120
    handled: dict[int, datetime] = {}
    while time.monotonic() < deadline:
        with engine.connect() as c:
            rows = c.execute(select(jt.ledger.c.pandaid, jt.ledger.c.handled_at).where(
                jt.ledger.c.pandaid >= first_pandaid, jt.ledger.c.pandaid < first_pandaid + n
            )).all()  # fmt: skip
        handled = dict(rows)
        if len(handled) == n:
            break
        time.sleep(0.5)
    proc.terminate()
    proc.wait(30)
    if conn is not None:
        conn.disconnect()
    mine = (jt.ledger.c.pandaid >= first_pandaid, jt.ledger.c.pandaid < first_pandaid + n)
    with engine.connect() as c:
        memory, raised = c.execute(select(func.count(), func.sum(jt.ledger.c.files_raised))
                                   .where(*mine, jt.ledger.c.cause == "memory")).one()  # fmt: skip
    lat = np.array([(handled[p] - sent[p]).total_seconds() for p in handled])
    q = (lambda p: round(float(np.percentile(lat, p)), 3)) if len(lat) else (lambda p: None)
    return {
        "jobs": n, "rate_per_s": args.rate, "handled": len(handled),
        "lost": n - len(handled), "memory_failures": int(memory),
        "files_raised": int(raised or 0),
        "p50_s": q(50), "p90_s": q(90), "p99_s": q(99),
        "max_s": round(float(lat.max()), 3) if len(lat) else None,
        "trigger": "job_status messages" if broker else f"polling every {args.poll_interval} s",
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=20.0, help="job rows per second")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--files", type=int, default=400, help="input files per task")
    parser.add_argument("--kill-every", type=int, default=10)
    parser.add_argument("--poll-interval", type=float, default=1.0)
    parser.add_argument("--db", default=os.environ.get("SCOUTLESS_PANDA_DB_URL", DEFAULT_DB))
    parser.add_argument(
        "--broker", default=os.environ.get("SCOUTLESS_TEST_STOMP_URL", "stomp://127.0.0.1:61619")
    )
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    tmp = Path(tempfile.mkdtemp(prefix="scoutless-follow-bench-"))
    load_panda_ddl(args.db, reset=True)
    engine = make_engine(args.db)
    try:
        ids = make_tasks(engine, args.tasks, args.files)
        phases = {
            "messages": run_phase(engine, args, ids, 8_000_000_000, args.broker, tmp, "messages"),
            "polling": run_phase(engine, args, ids, 8_100_000_000, None, tmp, "polling"),
        }
        with engine.connect() as c:
            total = c.execute(select(func.count()).select_from(jt.ledger)).scalar()
            distinct = c.execute(select(func.count(func.distinct(jt.ledger.c.pandaid)))).scalar()
    finally:
        engine.dispose()
    result = {
        "benchmark": "follow_jobs",
        "what": "seconds from a job row committed (and its job_status message sent) to the "
        "ledger row of the follower, its learnt outcome and ramCount writes committed in one "
        "transaction",
        "phases": phases,
        "duplicated": int(total - distinct),
        "tasks": args.tasks,
        "kill_every": args.kill_every,
    }
    emit(result, args.out, loop_before, indent=2)


if __name__ == "__main__":
    main()
