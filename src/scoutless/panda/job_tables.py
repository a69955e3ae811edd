"""The tables the job follower reads and writes: PanDA's, as narrow views, and its own.

PanDA's (names and types as in ``pg_PANDA_TABLE.sql``; only the columns used): the ended
jobs in ``jobsactive4`` and ``jobsarchived4`` (read by ``modificationtime``, which both
index: ``jobsactive4_modtime_idx``, ``jobsarch4_mtimeprodslabel_idx``), a job's files in
``filestable4`` (``filestable4_pandaid_idx``), the task's files in
``jedi_dataset_contents`` (their ``ramcount`` is what JEDI reads when it regenerates a job),
and the queues' ``maxrss`` in ``schedconfig_json``. ``jedi_tasks`` and ``jedi_datasets``
come from ``history.schema``.

The follower's own (created where missing): ``scoutless_job_ledger``, one row per job
attempt handled, (pandaid, attemptnr) its key, written in the transaction that learns its
outcome and writes its ramCounts (a restart finds it and writes nothing twice);
``scoutless_job_marks``, the high-water mark (modificationtime, pandaid) per job table;
``scoutless_job_tasks``, per task the ramCount the follower last wrote and the floor it
keeps (the highest value seen there that it did not write); ``scoutless_job_task_times``,
the same for the task's cpuTime and walltime (``job_times``); ``scoutless_job_forgotten``,
the tasks whose jobs it no longer reads (finished, or idle: ``forget_statuses``,
``forget_idle_s``), their ledger kept.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Engine,
    Float,
    Integer,
    MetaData,
    Numeric,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
    inspect,
)
from sqlalchemy.exc import SQLAlchemyError

panda_views = MetaData()


def _job_table(name: str) -> Table:
    return Table(
        name,
        panda_views,
        Column("pandaid", BigInteger, nullable=False),
        Column("modificationtime", DateTime, nullable=False),
        Column("jeditaskid", BigInteger),
        Column("attemptnr", SmallInteger, nullable=False),
        Column("jobstatus", String(15), nullable=False),
        Column("maxpss", BigInteger, doc="kB"),
        Column("minramcount", BigInteger, nullable=False, doc="MB, compensated"),
        Column("corecount", SmallInteger),
        Column("starttime", DateTime),
        Column("endtime", DateTime),
        Column("piloterrorcode", Integer, nullable=False),
        Column("transexitcode", String(128)),
        Column("piloterrordiag", String(500)),
        Column("exeerrordiag", String(500)),
        Column("specialhandling", String(80)),
        Column("processingtype", String(64)),
        Column("computingsite", String(128)),
        Column("nevents", BigInteger, nullable=False, server_default="0"),
        Column("cpuconsumptiontime", Numeric(20), nullable=False, server_default="0", doc="s"),
        Column("inputfilebytes", BigInteger),
        PrimaryKeyConstraint("pandaid", "modificationtime"),
    )


jobsactive4 = _job_table("jobsactive4")
jobsarchived4 = _job_table("jobsarchived4")
JOB_TABLES = (jobsactive4, jobsarchived4)

filestable4 = Table(
    "filestable4",
    panda_views,
    Column("row_id", BigInteger, nullable=False, primary_key=True),
    Column("pandaid", BigInteger, nullable=False),
    Column("modificationtime", DateTime, nullable=False),
    Column("lfn", String(4000)),
    Column("type", String(20)),
    Column("jeditaskid", BigInteger),
    Column("datasetid", BigInteger),
    Column("fileid", BigInteger),
    Column("attemptnr", SmallInteger),
)
jedi_dataset_contents = Table(
    "jedi_dataset_contents",
    panda_views,
    Column("jeditaskid", BigInteger, nullable=False),
    Column("datasetid", BigInteger, nullable=False),
    Column("fileid", BigInteger, nullable=False),
    Column("creationdate", DateTime, nullable=False),
    Column("lfn", String(4000), nullable=False),
    Column("type", String(20), nullable=False),
    Column("status", String(64), nullable=False),
    Column("ramcount", BigInteger),
    PrimaryKeyConstraint("jeditaskid", "datasetid", "fileid"),
)
schedconfig_json = Table(
    "schedconfig_json",
    panda_views,
    Column("panda_queue", String(50), primary_key=True),
    Column("data", JSON),
    Column("last_update", DateTime),
)
#: ``increaseRamLimitJobJEDI``'s input_types: the job's files whose ramCount it raises
INPUT_TYPES = ("input", "pseudo_input", "pp_input", "trn_log", "trn_output")

follower_metadata = MetaData()
ledger = Table(
    "scoutless_job_ledger",
    follower_metadata,
    Column("pandaid", BigInteger, nullable=False),
    Column("attemptnr", SmallInteger, nullable=False),
    Column("jeditaskid", BigInteger, nullable=False),
    Column("kind", String(8), nullable=False, doc="job | scout | merge"),
    Column("cause", String(16), nullable=False, doc="finished | memory | other"),
    Column("need", Float, doc="MB per core learnt (a lower bound for a memory failure)"),
    Column("mode", String(16), nullable=False, doc="the rollout's mode when handled"),
    Column("file_ramcount", Integer, doc="the retry's ramCount written (or, in shadow, not)"),
    Column("files_raised", Integer, doc="jedi_dataset_contents rows it raised"),
    Column("task_ramcount", Integer, doc="the task's ramCount written (or, in shadow, not)"),
    Column("detail", Text, doc="JSON: how the values were reached"),
    Column("job_modified", DateTime, nullable=False, doc="the row's modificationtime"),
    Column("handled_at", DateTime, nullable=False),
    PrimaryKeyConstraint("pandaid", "attemptnr", name="scoutless_job_ledger_pk"),
)
marks = Table(
    "scoutless_job_marks",
    follower_metadata,
    Column("source", String(32), primary_key=True),
    Column("modificationtime", DateTime, nullable=False),
    Column("pandaid", BigInteger, nullable=False),
)
followed_tasks = Table(
    "scoutless_job_tasks",
    follower_metadata,
    Column("jeditaskid", BigInteger, primary_key=True, autoincrement=False),
    Column("ramcount_written", Integer, doc="the follower's last write (NULL: none)"),
    Column("ramcount_floor", Integer, doc="the highest ramCount seen that it did not write"),
    Column("written_at", DateTime),
)

task_times = Table(
    "scoutless_job_task_times",
    follower_metadata,
    Column("jeditaskid", BigInteger, primary_key=True, autoincrement=False),
    Column("cputime_written", Integer, doc="the follower's last cpuTime write (NULL: none)"),
    Column("cputimeunit_written", String(32), doc="its unit (HS06sPerEvent, mHS06sPerEvent)"),
    Column("cputime_floor", Float, doc="HS06·s per event: the highest seen it did not write"),
    Column("walltime_written", Integer, doc="the follower's last walltime write"),
    Column("max_cpu_s", Float, doc="the largest cpuConsumptionTime of its finished jobs"),
    Column("max_input_bytes", Float, doc="the largest input (bytes) of its finished jobs"),
    Column("written_at", DateTime),
)
forgotten = Table(
    "scoutless_job_forgotten",
    follower_metadata,
    Column("jeditaskid", BigInteger, primary_key=True, autoincrement=False),
    Column("reason", String(32), nullable=False, doc="the task's status, or 'idle'"),
    Column("forgotten_at", DateTime, nullable=False),
)


def create_follower_tables(engine: Engine) -> None:
    """The follower's tables, unless they exist (another process may create them meanwhile)."""
    try:
        follower_metadata.create_all(engine)
    except SQLAlchemyError:
        names = [t.name for t in follower_metadata.sorted_tables]
        if not all(inspect(engine).has_table(n) for n in names):
            raise
