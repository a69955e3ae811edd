"""PanDA-compatible tables (SQLAlchemy Core), named and typed as in PanDA's PostgreSQL DDL.

Only the columns scoutless reads or writes are declared; a production PanDA database has
more, which the readers ignore. Each declared column has PanDA's exact name, type and
nullability (``../shared/data/panda-database/pg_PANDA_TABLE.sql``; a test compares them
column by column), so the same code reads and writes a database created from PanDA's own
DDL. The types stay portable to SQLite and Oracle (``taskparams`` is text: a CLOB there).

PanDA keeps its tables in a schema (``doma_panda`` on PostgreSQL); the tables here carry
none, and the engine's ``search_path`` (``Settings.db_schema``, see ``panda_db.make_engine``)
selects it, so raw SQL (``COPY``) and Core statements resolve the same tables.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    Numeric,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
    text,
)

metadata = MetaData()
EPOCH = "1970-01-01 00:00:00"  # PanDA's DEFAULT for job timestamps (to_date('01-JAN-1970'))

jedi_tasks = Table(
    "jedi_tasks",
    metadata,
    Column("jeditaskid", BigInteger, primary_key=True, autoincrement=False),
    Column("taskname", String(256)),
    Column("username", String(128), nullable=False),
    Column("prodsourcelabel", String(20)),
    Column("tasktype", String(64)),
    Column("processingtype", String(64)),
    Column("transpath", String(128)),
    Column("transuses", String(64)),
    Column("transhome", String(128)),
    Column("architecture", String(256)),
    Column("corecount", Integer),
    Column("campaign", String(32)),
    Column("workqueue_id", Integer),
    Column("gshare", String(32)),
    Column("site", String(60)),
    Column("baseramcount", Integer),
    Column("basewalltime", Integer),
    Column("cpuefficiency", SmallInteger),
    Column("taskpriority", Integer, doc="the priority the task was submitted with"),
    Column("currentpriority", Integer, doc="JEDI may raise it (e.g. to 900 near the end)"),
    Column("cputimeunit", String(32)),
    Column("ramunit", String(32)),
    Column("status", String(64), nullable=False),
    Column("creationdate", DateTime, nullable=False),
    Column("modificationtime", DateTime, nullable=False),
    # Overwritten by scouts: read only for comparison, never as a feature (DESIGN.md §2).
    Column("ramcount", Integer),
    Column("cputime", Integer),
    Column("walltime", Integer),
    Column("iointensity", Integer),
    Column("diskio", Integer),
    # What the JEDI-side plugin (scoutless.panda) checks and writes.
    Column("walltimeunit", String(32)),
    Column("iointensityunit", String(32)),
    Column("splitrule", String(200), doc="'US=2' scouting on, 'US=1' off, 'PC=1' push status"),
    Column("lockedby", String(56), doc="the JEDI process working on the task; NULL: free"),
    Column("lockedtime", DateTime),
)

jedi_taskparams = Table(
    "jedi_taskparams",
    metadata,
    Column("jeditaskid", BigInteger, primary_key=True, autoincrement=False),
    Column("taskparams", Text),
)

jedi_datasets = Table(
    "jedi_datasets",
    metadata,
    Column("jeditaskid", BigInteger, nullable=False),
    Column("datasetid", BigInteger, nullable=False),
    Column("datasetname", String(255), nullable=False),
    Column("type", String(20), nullable=False),
    Column("creationtime", DateTime, nullable=False),
    Column("modificationtime", DateTime, nullable=False),
    Column("masterid", BigInteger),
    Column("nfiles", BigInteger),
    Column("nevents", BigInteger),
    PrimaryKeyConstraint("jeditaskid", "datasetid"),
    Index("jedi_datasets_task_idx", "jeditaskid"),
)

jobsarchived4 = Table(
    "jobsarchived4",
    metadata,
    Column("pandaid", BigInteger, nullable=False),
    Column("modificationtime", DateTime, nullable=False, doc="PanDA partitions on it"),
    Column("jeditaskid", BigInteger),
    Column("jobstatus", String(15), nullable=False),
    Column("specialhandling", String(80), doc="contains 'sj' for scout jobs, as in PanDA"),
    Column("attemptnr", SmallInteger, nullable=False),
    Column(
        "assignedpriority",
        Integer,
        nullable=False,
        server_default=text("0"),
        doc="JobGenerator's: the task's currentpriority; scouts max(901, it + 1)",
    ),
    Column("currentpriority", Integer, nullable=False, server_default=text("0")),
    Column("parentid", BigInteger, doc="a retry's failed attempt (PanDA's retryJob)"),
    # PanDA's defaults where it has them, so rows that do not say keep what PanDA would store
    Column(
        "creationtime",
        DateTime,
        nullable=False,
        server_default=text(f"'{EPOCH}'"),
        doc="when the job was defined (retries: after the failure)",
    ),
    Column("transexitcode", String(128)),
    Column(
        "piloterrorcode",
        Integer,
        nullable=False,
        server_default=text("0"),
        doc="1212/1235 memory, 1213 walltime, 1099 stage-in …",
    ),
    Column("piloterrordiag", String(500)),
    Column("exeerrorcode", Integer, nullable=False, server_default=text("0")),
    Column(
        "jobdispatchererrorcode",
        Integer,
        nullable=False,
        server_default=text("0"),
        doc="100: lost heartbeat (the watcher)",
    ),
    Column("jobdispatchererrordiag", String(250)),
    Column("ninputdatafiles", Integer),
    Column("corecount", SmallInteger),
    Column("actualcorecount", Integer),
    Column("maxpss", BigInteger, doc="kB"),
    Column("maxrss", BigInteger, doc="kB"),
    Column("cpuconsumptiontime", Numeric(20, asdecimal=False), nullable=False, doc="s"),
    Column("starttime", DateTime),
    Column("endtime", DateTime),
    Column("nevents", BigInteger, nullable=False),
    Column("inputfilebytes", BigInteger),
    Column("outputfilebytes", BigInteger),
    Column("totrbytes", BigInteger),
    Column("totwbytes", BigInteger),
    Column("hs06sec", BigInteger),
    Column("hs06", BigInteger, doc="HS06 of the slot the job ran in (corePower × coreCount)"),
    Column("computingsite", String(128)),
    Column("modificationhost", String(128)),
    PrimaryKeyConstraint("pandaid", "modificationtime"),
    Index("jobsarchived4_task_idx", "jeditaskid"),
)

PANDA_TABLES = (jedi_tasks, jedi_taskparams, jedi_datasets, jobsarchived4)
