"""PanDA per-job CSV exports (``job_records_<jeditaskid>.csv``: one file per task).

Unit of learning: one job row (the files hold 5–6 tasks, far too few to learn tasks from).
The targets are PanDA's own, from the lead's ``compute_task_targets`` with each job as its
own "task" (``min_jobs_per_task=1``), so a job's memory is ceil(maxPSS/cores)×1.10 in MB per
core, cputime HS06·s per event (×1.5, jobs with enough events only), io kB/s per core and
walltime s. The task's PanDA *scout* estimate (first 10 jobs by pandaid) is the incumbent
baseline in ``{t}_scout_value``; the job's own requests give ``user_request`` (memory =
minramcount / cores, walltime = maxcpucount). There are no users or timestamps, so no
last-2; pandaid order stands for submission order (the time split is the last 15 % of each
file's pandaids; ``creationdate`` is left empty).

Features: the task (file) id and the job's submission parameters, plus two values fixed when
the job is *dispatched* (brokerage), before it runs: the site and the core count of the slot
(``actualcorecount``; these files have no separate ``corecount``). They are renamed
``dispatch_site`` / ``dispatch_corecount`` because at *task* submission they are unknown; a
task-level model must not use them.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pandas as pd

from scoutless.config import Settings
from scoutless.features.spec import FeatureSpec
from scoutless.sources.assemble import TraceJobs, request_col
from scoutless.sources.common import (
    BadLines,
    TraceParseError,
    finite_numbers,
    read_text,
    refused_number,
)
from scoutless.targets.estimators import compute_task_targets
from scoutless.targets.job_records import estimator_inputs
from scoutless.targets.spec import TARGET_NAMES, scout_value_col, value_col

REQUIRED_COLUMNS = ("pandaid", "maxpss", "wall_time", "actualcorecount")
NUMERIC_COLUMNS = (
    "pandaid", "actualcorecount", "assignedpriority", "inputfilebytes", "outputfilebytes",
    "maxcpucount", "maxdiskcount", "maxpss", "minramcount", "nevents", "wall_time", "hs06sec",
)  # fmt: skip
PANDA_JOB_FEATURES: tuple[FeatureSpec, ...] = (
    FeatureSpec("task", "categorical", "file name", "jeditaskid of the file's task"),
    FeatureSpec("dispatch_site", "categorical", "computingsite", "set at brokerage"),
    FeatureSpec("dispatch_corecount", "numerical", "actualcorecount", "slot cores, at dispatch"),
    FeatureSpec("inputfilebytes", "numerical", "jobsarchived4"),
    FeatureSpec("nevents", "numerical", "jobsarchived4", "events assigned to the job"),
    FeatureSpec("minramcount", "numerical", "jobsarchived4", "MB requested per job"),
    FeatureSpec("maxcpucount", "numerical", "jobsarchived4", "s, walltime limit"),
    FeatureSpec("maxdiskcount", "numerical", "jobsarchived4", "MB"),
    FeatureSpec("assignedpriority", "numerical", "jobsarchived4"),
)
_TASK_ID = re.compile(r"(\d{6,})")


def task_id_from_name(path: str | Path) -> int:
    """The jeditaskid in a ``job_records_[10k_]<id>.csv`` file name (the last long number)."""
    found = _TASK_ID.findall(Path(path).name)
    if not found:
        raise TraceParseError("no jeditaskid in the file name", source=str(path))
    return int(found[-1])


def parse_panda_jobs_text(
    text: str, *, task_id: int, source: str = "<text>", skip_bad: bool = False
) -> tuple[pd.DataFrame, list[TraceParseError]]:
    """Rows of one export as numbers; a row with a wrong field count or a non-numeric value
    in a numeric column is an error at its line (or skipped with ``skip_bad``)."""
    bad = BadLines(skip=skip_bad)
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeError) as exc:
        raise TraceParseError(f"not a CSV table: {exc}", source=source) from exc
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise TraceParseError(f"missing columns {missing}", source=source, line=1)
    header_fields = len(frame.columns)
    lines = text.splitlines()
    keep = np.ones(len(frame), dtype=bool)
    numeric = {}
    for col in (c for c in NUMERIC_COLUMNS if c in frame.columns):
        raw = frame[col].str.strip()
        values = finite_numbers(raw.replace({"": None, "None": None, "NULL": None}))
        wrong = values.isna() & raw.ne("") & ~raw.isin(["None", "NULL", "nan", "NaN"])
        for i in np.flatnonzero(wrong.to_numpy() & keep):
            said = f"column {col!r}: {refused_number(frame[col].iloc[i])}"
            bad.report(TraceParseError(said, source=source, line=i + 2))
            keep[i] = False
        numeric[col] = values
    for i, line in enumerate(lines[1 : len(frame) + 1]):
        if keep[i] and line.count(",") + 1 < header_fields and '"' not in line:
            bad.report(TraceParseError("too few fields", source=source, line=i + 2))
            keep[i] = False
    frame = frame.assign(**numeric)
    for col in NUMERIC_COLUMNS:  # optional columns absent from an export are unknown
        if col not in frame.columns:
            frame[col] = np.nan
    frame["pandaid"] = frame["pandaid"].astype(float)
    bad_id = frame["pandaid"].isna() & keep
    for i in np.flatnonzero(bad_id.to_numpy()):
        bad.report(TraceParseError("pandaid is empty", source=source, line=i + 2))
        keep[i] = False
    frame = frame[keep].copy()
    frame["jeditaskid_of_task"] = task_id
    if "jobstatus" not in frame.columns:  # the exports without it hold finished jobs only
        frame["jobstatus"] = "finished"
    return frame, bad.errors


def read_panda_jobs(
    paths: list[str | Path] | str | Path, *, skip_bad: bool = False
) -> tuple[pd.DataFrame, list[TraceParseError]]:
    """All rows of one or more exports, with the task id taken from each file name."""
    paths = [paths] if isinstance(paths, str | Path) else list(paths)
    frames, errors = [], []
    for path in paths:
        frame, bad = parse_panda_jobs_text(
            read_text(path), task_id=task_id_from_name(path), source=str(path), skip_bad=skip_bad
        )
        frames.append(frame)
        errors += bad
    return pd.concat(frames, ignore_index=True), errors


def panda_jobs(
    rows: pd.DataFrame,
    bad_lines: list[TraceParseError] | None = None,
    *,
    settings: Settings,
) -> TraceJobs:
    """Normalise export rows into :class:`TraceJobs` (see the module docstring)."""
    per_job = settings.model_copy(
        update={"targets": settings.targets.model_copy(update={"min_jobs_per_task": 1})}
    )
    rows = rows.drop_duplicates("pandaid").reset_index(drop=True)
    if "jobstatus" in rows:
        rows = rows[rows["jobstatus"].astype(str).str.strip().eq("finished")].reset_index(drop=True)
    jobs, tasks = estimator_inputs(rows, "pandaid")
    values = compute_task_targets(jobs, tasks, settings=per_job)
    task_jobs, task_tasks = estimator_inputs(rows, "jeditaskid_of_task")
    scouts = compute_task_targets(task_jobs, task_tasks, settings=settings, scouts_only=True)

    pandaid = rows["pandaid"].astype(np.int64)
    cores = rows["actualcorecount"].where(rows["actualcorecount"] > 0)
    frame = pd.DataFrame(
        {
            "jeditaskid": pandaid,
            "task": rows["jeditaskid_of_task"].astype(str),
            "dispatch_site": rows["computingsite"].astype("string")
            if "computingsite" in rows
            else pd.NA,
            "dispatch_corecount": cores,
            **{c: rows.get(c, np.nan) for c in (
                "inputfilebytes", "nevents", "minramcount", "maxcpucount", "maxdiskcount",
                "assignedpriority")},
        }
    )  # fmt: skip
    for t in TARGET_NAMES:
        frame[value_col(t)] = pandaid.map(values[t]).to_numpy(dtype=float)
        frame[scout_value_col(t)] = rows["jeditaskid_of_task"].map(scouts[t]).to_numpy(dtype=float)
    frame[request_col("memory")] = (rows["minramcount"] / cores).where(rows["minramcount"] > 0)
    frame[request_col("walltime")] = rows["maxcpucount"].where(rows["maxcpucount"] > 0)
    # pandaid order is submission order; each task's last 15 % of jobs is its test period
    rank = frame.groupby("task")["jeditaskid"].rank(pct=True, method="first")
    frame["creationdate"] = pd.NaT
    frame["submit_order"] = rank
    units = {
        "memory": "MB/core",
        "cputime": "HS06s/event",
        "io": "kB/s/core",
        "walltime": "s",
    }
    info = {
        "format": "panda-jobs",
        "unit": "one job",
        "tasks": sorted(frame["task"].unique().tolist()),
        "order": "pandaid within each task file (no timestamps in the export)",
        "dispatch_features": ["dispatch_site", "dispatch_corecount"],
    }
    return TraceJobs(
        frame, list(PANDA_JOB_FEATURES), units, "panda-jobs", info, bad_lines or [], "submit_order"
    )
