"""PanDA's per-job records (the monitor's export: ``wall_time``, ``maxpss``, ``hs06sec`` …)
in the shape PanDA's target estimators read: the trace adapter (``sources/panda_jobs.py``)
and the generator's realism check (``history/synthetic/realism.py``) share it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def estimator_inputs(rows: pd.DataFrame, unit_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """jobsarchived4-like jobs and bare tasks for ``compute_task_targets``, one task per
    distinct ``rows[unit_id]`` (the job itself with ``"pandaid"``, its task with
    ``"jeditaskid_of_task"``)."""
    wall = rows["wall_time"].astype(float)
    start = pd.Timestamp("2000-01-01", tz="UTC")
    cores = rows["actualcorecount"].where(rows["actualcorecount"] > 0, 1.0)
    jobs = pd.DataFrame(
        {
            "jeditaskid": rows[unit_id].astype(np.int64),
            "pandaid": rows["pandaid"].astype(np.int64),
            "jobstatus": rows.get("jobstatus", "finished"),
            "actualcorecount": cores,
            "maxpss": rows["maxpss"],
            "starttime": start,
            "endtime": start + pd.to_timedelta(wall, unit="s"),
            "nevents": rows.get("nevents"),
            "inputfilebytes": rows.get("inputfilebytes"),
            "outputfilebytes": rows.get("outputfilebytes"),
            # PanDA's hs06sec = wall × corePower × cores: the job's HS06 is hs06sec / wall
            "hs06": rows["hs06sec"] / wall.where(wall > 0) if "hs06sec" in rows else np.nan,
        }
    )
    tasks = pd.DataFrame({"jeditaskid": jobs["jeditaskid"].unique(), "baseramcount": 0.0})
    return jobs, tasks
