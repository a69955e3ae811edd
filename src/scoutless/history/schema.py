"""PanDA-compatible tables (SQLAlchemy Core), named as in PanDA's PostgreSQL schema.

Only the columns scoutless reads or writes are declared; a production PanDA database has
more, which the readers ignore. Types are portable to SQLite, PostgreSQL and Oracle
(no JSON column type: ``taskparams`` is text, as PanDA stores it as a CLOB).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

jedi_tasks = Table(
    "jedi_tasks",
    metadata,
    Column("jeditaskid", BigInteger, primary_key=True, autoincrement=False),
    Column("taskname", String(256)),
    Column("username", String(128)),
    Column("prodsourcelabel", String(20)),
    Column("tasktype", String(64)),
    Column("processingtype", String(64)),
    Column("transpath", String(128)),
    Column("transuses", String(64)),
    Column("transhome", String(128)),
    Column("architecture", String(256)),
    Column("corecount", Integer),
    Column("campaign", String(72)),
    Column("workqueue_id", Integer),
    Column("gshare", String(32)),
    Column("site", String(128)),
    Column("baseramcount", Integer),
    Column("basewalltime", Integer),
    Column("cpuefficiency", Integer),
    Column("cputimeunit", String(32)),
    Column("ramcountunit", String(32)),
    Column("status", String(64)),
    Column("creationdate", DateTime),
    Column("modificationtime", DateTime),
    # Overwritten by scouts: read only for comparison, never as a feature (DESIGN.md §2).
    Column("ramcount", Integer),
    Column("cputime", Integer),
    Column("walltime", Integer),
    Column("iointensity", Integer),
    Column("diskio", Integer),
)

jedi_taskparams = Table(
    "jedi_taskparams",
    metadata,
    Column("jeditaskid", BigInteger, primary_key=True, autoincrement=False),
    Column("taskparams", Text, nullable=False),
)

jedi_datasets = Table(
    "jedi_datasets",
    metadata,
    Column("jeditaskid", BigInteger, nullable=False),
    Column("datasetid", BigInteger, primary_key=True, autoincrement=False),
    Column("datasetname", String(255)),
    Column("type", String(20)),
    Column("masterid", BigInteger),
    Column("nfiles", Integer),
    Column("nevents", BigInteger),
    Index("jedi_datasets_task_idx", "jeditaskid"),
)

jobsarchived4 = Table(
    "jobsarchived4",
    metadata,
    Column("pandaid", BigInteger, primary_key=True, autoincrement=False),
    Column("jeditaskid", BigInteger, nullable=False),
    Column("jobstatus", String(15)),
    Column("specialhandling", String(80), doc="contains 'sj' for scout jobs, as in PanDA"),
    Column("attemptnr", Integer),
    Column("parentid", BigInteger, doc="a retry's failed attempt (PanDA's retryJob)"),
    Column("creationtime", DateTime, doc="when the job was defined (retries: after the failure)"),
    Column("modificationtime", DateTime),
    Column("transexitcode", String(128)),
    Column("piloterrorcode", Integer, doc="1212/1235 memory, 1213 walltime, 1099 stage-in …"),
    Column("piloterrordiag", String(500)),
    Column("exeerrorcode", Integer),
    Column("jobdispatchererrorcode", Integer, doc="100: lost heartbeat (the watcher)"),
    Column("jobdispatchererrordiag", String(250)),
    Column("ninputdatafiles", Integer),
    Column("corecount", Integer),
    Column("actualcorecount", Integer),
    Column("maxpss", BigInteger, doc="kB"),
    Column("maxrss", BigInteger, doc="kB"),
    Column("cpuconsumptiontime", BigInteger, doc="s"),
    Column("starttime", DateTime),
    Column("endtime", DateTime),
    Column("nevents", BigInteger),
    Column("inputfilebytes", BigInteger),
    Column("outputfilebytes", BigInteger),
    Column("totrbytes", BigInteger),
    Column("totwbytes", BigInteger),
    Column("hs06sec", BigInteger),
    Column("hs06", Integer, doc="HS06 of the slot the job ran in (corePower × coreCount)"),
    Column("computingsite", String(128)),
    Column("modificationhost", String(128)),
    Index("jobsarchived4_task_idx", "jeditaskid"),
)

PANDA_TABLES = (jedi_tasks, jedi_taskparams, jedi_datasets, jobsarchived4)
