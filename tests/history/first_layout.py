"""A history as the first generator (commit c7fe8e6) wrote it: PanDA's tables in their
first layout, before the job clock and error codes (``creationtime``, ``piloterrorcode`` …),
the datasets' timestamps and ``ramunit`` (then ``ramcountunit``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
from sqlalchemy import BigInteger, Column, DateTime, Integer, MetaData, String, Table, Text

from scoutless.history.panda_db import make_engine
from scoutless.history.synthetic import generate_chunk
from scoutless.history.synthetic.truth import synthetic_truth

first = MetaData()
Table(
    "jedi_tasks", first,
    Column("jeditaskid", BigInteger, primary_key=True, autoincrement=False),
    *(Column(c, String(256)) for c in (
        "taskname", "username", "prodsourcelabel", "tasktype", "processingtype", "transpath",
        "transuses", "transhome", "architecture", "campaign", "gshare", "site", "cputimeunit",
        "ramcountunit", "status")),
    *(Column(c, Integer) for c in (
        "corecount", "workqueue_id", "baseramcount", "basewalltime", "cpuefficiency",
        "ramcount", "cputime", "walltime", "iointensity", "diskio")),
    Column("creationdate", DateTime), Column("modificationtime", DateTime),
)  # fmt: skip
Table(
    "jedi_taskparams", first,
    Column("jeditaskid", BigInteger, primary_key=True, autoincrement=False),
    Column("taskparams", Text, nullable=False),
)  # fmt: skip
Table(
    "jedi_datasets", first,
    Column("jeditaskid", BigInteger, nullable=False),
    Column("datasetid", BigInteger, primary_key=True, autoincrement=False),
    Column("datasetname", String(255)), Column("type", String(20)),
    Column("masterid", BigInteger), Column("nfiles", Integer), Column("nevents", BigInteger),
)  # fmt: skip
Table(
    "jobsarchived4", first,
    Column("pandaid", BigInteger, primary_key=True, autoincrement=False),
    Column("jeditaskid", BigInteger, nullable=False),
    Column("jobstatus", String(15)), Column("specialhandling", String(80)),
    *(Column(c, Integer) for c in ("attemptnr", "corecount", "actualcorecount", "hs06")),
    *(Column(c, BigInteger) for c in (
        "maxpss", "maxrss", "cpuconsumptiontime", "nevents", "inputfilebytes",
        "outputfilebytes", "totrbytes", "totwbytes", "hs06sec")),
    Column("starttime", DateTime), Column("endtime", DateTime),
    Column("computingsite", String(128)), Column("modificationhost", String(128)),
)  # fmt: skip
#: the job columns the first layout lacks, as the reader names them
LACKING_JOB_COLUMNS = (
    "assignedpriority", "creationtime", "currentpriority", "exeerrorcode", "jobdispatchererrorcode", "jobdispatchererrordiag",
    "modificationtime", "ninputdatafiles", "parentid", "piloterrorcode", "piloterrordiag",
    "transexitcode",
)  # fmt: skip


def write_first_layout_history(path: Path, n_tasks: int = 300, seed: int = 3) -> str:
    """A SQLite file at ``path`` holding ``n_tasks`` generated tasks in the first layout (in
    SQLite's default rollback-journal mode, as a user's file may be); returns its URL."""
    frames = generate_chunk(n_tasks, seed=seed)
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    first.create_all(engine)
    synthetic_truth.create(engine)  # the generator's truth table: the same layout then
    parts = {"jedi_tasks": frames.tasks.rename(columns={"ramunit": "ramcountunit"}),
             "jedi_taskparams": frames.taskparams, "jedi_datasets": frames.datasets,
             "jobsarchived4": frames.jobs, synthetic_truth.name: frames.truth}  # fmt: skip
    with engine.begin() as conn:
        for name, frame in parts.items():
            table = first.tables.get(name, synthetic_truth)
            frame = pd.DataFrame(frame)[[c.name for c in table.columns if c.name in frame.columns]]
            rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
            conn.execute(table.insert(), rows)
    engine.dispose()
    with sqlite3.connect(path) as raw:  # outside a transaction: SQLite ignores it inside
        raw.execute("PRAGMA journal_mode=DELETE")
    raw.close()
    return url
