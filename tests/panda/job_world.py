"""A small PanDA for the job follower's tests: the tables it reads and writes, tasks as the
listener leaves them (sized, logged with their rollout arm) and ended job rows."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from sqlalchemy import Engine, delete, insert, select

from scoutless.history.schema import jedi_datasets, jedi_tasks
from scoutless.history.schema import metadata as history_metadata
from scoutless.ops.prediction_log import log_metadata, predictions_table
from scoutless.ops.rollout import create_rollout_table, set_rollout
from scoutless.panda import job_tables as jt

T0 = datetime(2026, 12, 1, 12, 0, 0)
FILES_PER_JOB = 2


def create_world(engine: Engine, *, mode: str = "full") -> None:
    """PanDA's tables the follower touches (narrow views on SQLite), the prediction log and
    the rollout in ``mode``."""
    history_metadata.create_all(engine, tables=[jedi_tasks, jedi_datasets])
    jt.panda_views.create_all(engine)
    log_metadata.create_all(engine, tables=[predictions_table])
    create_rollout_table(engine)
    if mode != "shadow":
        set_rollout(engine, mode, seed=0, reason="tests", changed_by="tests")


def add_task(engine: Engine, task_id: int, *, ramcount: int = 2000, cores: int = 1,
             ramunit: str = "MBPerCore", splitrule: str = "PC=1,US=1", arm: str = "full",
             n_files: int = 40, status: str = "running", cputime: int | None = None,
             cputimeunit: str | None = None, walltime: int | None = None) -> None:  # fmt: skip
    """A task sized at submission (its ramCount applied, its prediction logged) with one
    master input dataset of ``n_files`` files, all at ramCount 0."""
    now = T0
    with engine.begin() as conn:
        conn.execute(insert(jedi_tasks).values(
            jeditaskid=task_id, username="u", status=status, creationdate=now,
            modificationtime=now, ramcount=ramcount, ramunit=ramunit, corecount=cores,
            baseramcount=0, splitrule=splitrule, cputime=cputime, cputimeunit=cputimeunit,
            walltime=walltime, basewalltime=0, cpuefficiency=100,
        ))  # fmt: skip
        conn.execute(insert(jedi_datasets).values(
            jeditaskid=task_id, datasetid=1, datasetname=f"in.{task_id}", type="input",
            creationtime=now, modificationtime=now,
        ))  # fmt: skip
        conn.execute(insert(predictions_table).values(
            request_id=f"r{task_id}", jeditaskid=task_id, model_version="m", policy="risk",
            predictions="{}", created_at=now, arm=arm,
        ))  # fmt: skip
    add_files(engine, task_id, 1, n_files)


def add_files(engine: Engine, task_id: int, dataset_id: int, n_files: int) -> None:
    """The task's input files (``jedi_dataset_contents``), all at ramCount 0."""
    with engine.begin() as conn:
        conn.execute(insert(jt.jedi_dataset_contents), [
            {"jeditaskid": task_id, "datasetid": dataset_id, "fileid": f, "creationdate": T0,
             "lfn": f"f{task_id}.{f}", "type": "input", "status": "ready", "ramcount": 0}
            for f in range(n_files)
        ])  # fmt: skip


def add_queue(engine: Engine, queue: str, maxrss_mb: int, corepower: float | None = None,
              maxtime_s: int | None = None) -> None:  # fmt: skip
    data = ({"maxrss": maxrss_mb} | ({"corepower": corepower} if corepower else {})
            | ({"maxtime": maxtime_s} if maxtime_s else {}))  # fmt: skip
    with engine.begin() as conn:
        conn.execute(insert(jt.schedconfig_json).values(
            panda_queue=queue, data=json.dumps(data), last_update=T0))  # fmt: skip


def add_job(engine: Engine, task_id: int, pandaid: int, *, status: str = "finished",
            maxpss_mb: float | None = 1800.0, minramcount: int = 1800, code: int = 0,
            seconds: float = 0.0, table: str = "jobsarchived4", cores: int = 1,
            specialhandling: str | None = None, transexitcode: str | None = None,
            diag: str | None = None, site: str = "SITE_A", files: bool = True,
            nevents: int | None = None, cpu_s: int | None = None,
            input_bytes: int | None = None) -> None:  # fmt: skip
    """An ended job (modificationtime T0 + ``seconds``) with its input files in filestable4
    (the task's files pandaid × FILES_PER_JOB …, modulo their number; ``files``
    False: the job's files are there already, its row moved between job tables)."""
    mtime = T0 + timedelta(seconds=seconds)  # unset counts left to PanDA's DDL's defaults
    view = jt.jobsarchived4 if table == "jobsarchived4" else jt.jobsactive4
    with engine.begin() as conn:
        conn.execute(insert(view).values(
            pandaid=pandaid, modificationtime=mtime, jeditaskid=task_id, attemptnr=1,
            jobstatus=status, maxpss=None if maxpss_mb is None else int(maxpss_mb * 1024),
            minramcount=minramcount, corecount=cores, starttime=mtime - timedelta(hours=2),
            endtime=mtime, piloterrorcode=code, transexitcode=transexitcode,
            piloterrordiag=diag, specialhandling=specialhandling, computingsite=site,
            **{k: v for k, v in {"nevents": nevents, "cpuconsumptiontime": cpu_s,
                                 "inputfilebytes": input_bytes}.items() if v is not None},
        ))  # fmt: skip
        if not files:
            return
        c = jt.jedi_dataset_contents.c
        known = conn.execute(select(c.datasetid, c.fileid).where(c.jeditaskid == task_id)
                             .order_by(c.datasetid, c.fileid)).all()  # fmt: skip
        files = [known[(pandaid * FILES_PER_JOB + k) % len(known)] for k in range(FILES_PER_JOB)]
        conn.execute(insert(jt.filestable4), [
            {"row_id": pandaid * 10 + k, "pandaid": pandaid, "modificationtime": mtime,
             "lfn": f"f{task_id}.{f}", "type": "input", "jeditaskid": task_id,
             "datasetid": d, "fileid": f}
            for k, (d, f) in enumerate(files)
        ])  # fmt: skip


def file_ramcounts(engine: Engine, task_id: int, pandaid: int) -> list[int]:
    """The ramCounts of a job's input files."""
    c, f = jt.jedi_dataset_contents.c, jt.filestable4.c
    stmt = select(c.ramcount).join_from(
        jt.filestable4, jt.jedi_dataset_contents,
        (c.jeditaskid == f.jeditaskid) & (c.datasetid == f.datasetid) & (c.fileid == f.fileid),
    ).where(f.pandaid == pandaid, c.jeditaskid == task_id)  # fmt: skip
    with engine.connect() as conn:
        return [int(r) for (r,) in conn.execute(stmt).all()]


def task_columns(engine: Engine, task_id: int, *names: str) -> tuple:
    """Columns of the task's row in jedi_tasks."""
    with engine.connect() as conn:
        return tuple(conn.execute(select(*(jedi_tasks.c[n] for n in names)).where(
            jedi_tasks.c.jeditaskid == task_id)).one())  # fmt: skip


def task_ramcount(engine: Engine, task_id: int) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(jedi_tasks.c.ramcount).where(
            jedi_tasks.c.jeditaskid == task_id)).scalar())  # fmt: skip


def follow_from(engine: Engine, start: datetime) -> None:
    """The follower's progress cleared and its marks put just before ``start``: the session's
    PanDA database is shared, and a follower with no mark follows every sized task's jobs
    from the first, other modules' (and the generated history's) too."""
    jt.create_follower_tables(engine)
    with engine.begin() as conn:
        for table in (jt.ledger, jt.marks, jt.followed_tasks):
            conn.execute(delete(table))
        conn.execute(insert(jt.marks), [
            {"source": t.name, "modificationtime": start - timedelta(seconds=1), "pandaid": 0}
            for t in (jt.jobsactive4, jt.jobsarchived4)
        ])  # fmt: skip


def ledger(engine: Engine) -> list[dict]:
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(
            select(jt.ledger).order_by(jt.ledger.c.pandaid)).mappings()]  # fmt: skip
