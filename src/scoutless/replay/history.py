"""The replay's input from a PanDA-compatible history database."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

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
    engine = make_engine(url, read_only=True, schema=settings.db_schema)
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


def carry_history(
    url: str, settings: Settings, ids: np.ndarray, bundle: Path, *, max_tasks: int = 5_000,
    seed: int = 42,
) -> None:
    """Write into ``bundle`` what its decision learns from the jobs of the tasks ``ids``
    (its training tasks; a seeded sample of ``max_tasks`` of them), which a training table
    does not hold: the jobs' spread per task kind and each width's room loads, so that
    the service prices what the replay would learn."""
    from scoutless.bundle import write_job_spreads, write_room_loads
    from scoutless.replay.site_rules import learnt_room_loads
    from scoutless.replay.submission import spread_table

    work, _ = workload_from_db(url, settings, n_tasks=max_tasks, seed=seed, only=ids)
    write_job_spreads(bundle, spread_table(work, settings))
    write_room_loads(bundle, learnt_room_loads(work, settings))
