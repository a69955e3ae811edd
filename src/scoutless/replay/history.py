"""The replay's input from a PanDA-compatible history database."""

from __future__ import annotations

import numpy as np
import pandas as pd

from scoutless.allocation.spread_table import SpreadTable
from scoutless.config import Settings
from scoutless.history.panda_db import make_engine, read_history, task_ids
from scoutless.replay.workload import Workload, WorkloadError, build_workload

#: the jobsarchived4 columns a replay reads (a 100k-task history has ~3M job rows)
REPLAY_JOB_COLUMNS = (
    "pandaid", "jeditaskid", "jobstatus", "specialhandling", "corecount", "actualcorecount",
    "maxpss", "starttime", "endtime", "nevents", "inputfilebytes", "outputfilebytes", "hs06",
    "assignedpriority", "ninputdatafiles",
)  # fmt: skip


def workload_from_db(
    url: str,
    settings: Settings,
    *,
    n_tasks: int | None = None,
    seed: int = 42,
    only: np.ndarray | None = None,
) -> tuple[Workload, pd.DataFrame]:
    """Workload and submission features of the history's tasks (``only`` those ids; a seeded
    sample of ``n_tasks``)."""
    engine = make_engine(url, read_only=True)
    try:
        ids = np.asarray(task_ids(engine), dtype=np.int64)
        if only is not None:
            ids = ids[np.isin(ids, only)]
        if not ids.size:
            raise WorkloadError(f"no tasks to replay in {url}")
        if n_tasks is not None and n_tasks < ids.size:
            ids = np.sort(np.random.default_rng(seed).choice(ids, n_tasks, replace=False))
        history = read_history(engine, ids.tolist(), job_columns=REPLAY_JOB_COLUMNS)
    finally:
        engine.dispose()
    work = build_workload(history.jobs, history.tasks, settings, history.taskparams)
    return work, history.features()


def learnt_spreads(
    url: str, settings: Settings, ids: np.ndarray, *, max_tasks: int = 5_000, seed: int = 42
) -> SpreadTable:
    """The jobs' spread per task kind learnt from the jobs of the tasks ``ids`` (a bundle's
    training tasks; a seeded sample of ``max_tasks`` of them): what a bundle carries so
    that the service prices the spread the replay would learn (``bundle.write_job_spreads``)."""
    from scoutless.replay.submission import spread_table

    work, _ = workload_from_db(url, settings, n_tasks=max_tasks, seed=seed, only=ids)
    return spread_table(work, settings)
