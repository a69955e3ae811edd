"""The work a replay pushes through every strategy: tasks and the measured needs of their jobs.

One unit = one *finished* job of the history (its maxPSS, wall time, cores, events, site
power): the work that had to be done. Failed attempts in the history are dropped, since the
replay decides itself which attempts fail. Units are ordered by task, the task's scouts
first (``specialhandling`` 'sj', else its first N by pandaid, :func:`scout_jobs`), then by
pandaid. The estimator input of every unit (:class:`JobFrame`) is built once, so the replay
re-estimates a task from any subset of its finished units with the project's own target
code (:func:`estimate`). Priorities are PanDA's columns: the task's
``jedi_tasks.currentpriority`` (``taskpriority`` where absent) and each unit's
``jobsarchived4.assignedpriority``; a history's scouts carry JEDI's scout boost, so a
scout unit keeps its task's priority and the replay boosts whichever units a strategy
scouts with.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from scoutless.config import Settings
from scoutless.features.extract import parse_taskparams
from scoutless.targets.estimators import (
    JobFrame,
    TargetEstimator,
    finished_jobs,
    job_frame,
    panda_estimators,
    scout_jobs,
)


class WorkloadError(ValueError):
    """A history the replay cannot use (empty, or no finished job with a wall time)."""


@dataclass
class Workload:
    """Per-task (index t) and per-unit (index j) arrays; units of task t are contiguous."""

    task_ids: np.ndarray  # jeditaskid of task t
    submit_s: np.ndarray  # submission, seconds after the first task's
    first_unit: np.ndarray  # index of task t's first unit
    n_units: np.ndarray
    n_scouts: np.ndarray  # the first n_scouts[t] units of task t are its scouts
    request_ram: np.ndarray  # ramCount requested at submission, MB/core (NaN: none)
    request_cputime: np.ndarray  # cpuTime requested, HS06·s/event (NaN: none)
    base_ram_mb: np.ndarray
    base_walltime_s: np.ndarray
    cpu_efficiency: np.ndarray  # percent
    kind: np.ndarray  # task kind (processingtype) for the metrics' breakdown
    task: np.ndarray  # task index of unit j
    is_scout: np.ndarray
    cores: np.ndarray
    wall_s: np.ndarray
    need_mb: np.ndarray  # maxPSS, MB
    nevents: np.ndarray
    core_power: np.ndarray  # HS06 per core of the slot the unit ran in
    frame: JobFrame  # estimator input of every unit; task_id = task index
    task_priority: np.ndarray | None = None  # currentpriority of task t (None: none known)
    unit_priority: np.ndarray | None = None  # assignedpriority of unit j, scouts unboosted
    input_files: np.ndarray | None = None  # input files unit j read (None: one each)

    def files_per_unit(self) -> np.ndarray:
        """Input files per unit (``ninputdatafiles``; 1 where the history has none): JEDI's
        retry counts a task's raised *files*."""
        if self.input_files is None:
            return np.ones(self.n_jobs, dtype=np.int64)
        return np.maximum(np.nan_to_num(self.input_files, nan=1.0), 1.0).astype(np.int64)

    def task_priority_or_default(self, default: int) -> np.ndarray:
        """Task priorities, ``default`` (JEDI's: 0) where the history has none."""
        if self.task_priority is None:
            return np.full(self.n_tasks, default, dtype=np.int64)
        return self.task_priority

    @property
    def n_tasks(self) -> int:
        return len(self.task_ids)

    @property
    def n_jobs(self) -> int:
        return len(self.task)

    def subset(self, task_index: np.ndarray) -> Workload:
        """The workload of some tasks (in the given order)."""
        task_index = np.asarray(task_index, dtype=np.int64)
        units = (
            np.concatenate(
                [
                    np.arange(self.first_unit[t], self.first_unit[t] + self.n_units[t])
                    for t in task_index
                ]
            )
            if len(task_index)
            else np.zeros(0, dtype=np.int64)
        )
        remap = np.full(self.n_tasks, -1, dtype=np.int64)
        remap[task_index] = np.arange(len(task_index))
        n_units = self.n_units[task_index]
        per_task = {
            name: getattr(self, name)[task_index]
            for name in ("task_ids", "submit_s", "n_scouts", "request_ram", "request_cputime",
                         "base_ram_mb", "base_walltime_s", "cpu_efficiency", "kind")
        }  # fmt: skip
        frame = _frame_rows(self.frame, units)
        frame = JobFrame(**{**_frame_dict(frame), "task_id": remap[frame.task_id]})
        task_priority, unit_priority = self.task_priority, self.unit_priority
        return Workload(
            task_priority=None if task_priority is None else task_priority[task_index],
            unit_priority=None if unit_priority is None else unit_priority[units],
            input_files=None if self.input_files is None else self.input_files[units],
            **per_task,
            first_unit=np.concatenate([[0], np.cumsum(n_units)[:-1]]).astype(np.int64),
            n_units=n_units,
            task=remap[self.task[units]],
            is_scout=self.is_scout[units],
            cores=self.cores[units],
            wall_s=self.wall_s[units],
            need_mb=self.need_mb[units],
            nevents=self.nevents[units],
            core_power=self.core_power[units],
            frame=frame,
        )


def _frame_dict(frame: JobFrame) -> dict[str, np.ndarray]:
    return {f.name: getattr(frame, f.name) for f in fields(frame)}


def _frame_rows(frame: JobFrame, rows: np.ndarray) -> JobFrame:
    return JobFrame(**{name: values[rows] for name, values in _frame_dict(frame).items()})


def _task_numbers(tasks: pd.DataFrame, column: str, default: float) -> np.ndarray:
    if column not in tasks.columns:
        return np.full(len(tasks), default)
    values = pd.to_numeric(tasks[column], errors="coerce").to_numpy(dtype=float)
    return np.where(np.isnan(values), default, values)


def _unit_numbers(units: pd.DataFrame, column: str) -> np.ndarray | None:
    if column not in units.columns:
        return None
    return pd.to_numeric(units[column], errors="coerce").to_numpy(dtype=float)


def _priorities(
    units: pd.DataFrame, tasks: pd.DataFrame, position: np.ndarray, is_scout: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Task currentpriority (else taskpriority) and unit assignedpriority; a unit without
    one, and every scout (its recorded priority holds the boost), gets its task's."""
    column = next((c for c in ("currentpriority", "taskpriority") if c in tasks.columns), None)
    if column is None:
        return None, None
    raw = pd.to_numeric(tasks[column], errors="coerce").to_numpy(dtype=float)
    if np.isnan(raw).all():
        return None, None
    task_priority = np.nan_to_num(raw, nan=0.0).astype(np.int64)
    inherited = task_priority[position]
    if "assignedpriority" not in units.columns:
        return task_priority, inherited
    own = pd.to_numeric(units["assignedpriority"], errors="coerce").to_numpy(dtype=float)
    keep = ~np.isnan(own) & ~is_scout
    return task_priority, np.where(keep, np.nan_to_num(own), inherited).astype(np.int64)


def _requests(tasks: pd.DataFrame, taskparams: pd.Series | None) -> tuple[np.ndarray, np.ndarray]:
    """ramCount (MB/core) and cpuTime (HS06·s/event) as submitted, NaN where not given."""
    ram = np.full(len(tasks), np.nan)
    cpu = np.full(len(tasks), np.nan)
    if taskparams is None or not len(taskparams):
        return ram, cpu
    params = taskparams.reindex(tasks["jeditaskid"].to_numpy())
    for i, raw in enumerate(params.to_numpy()):
        decoded = parse_taskparams(raw)
        value = decoded.get("ramCount")
        if isinstance(value, int | float) and value > 0:
            per_job = str(decoded.get("ramCountUnit", "MBPerCore")) == "MB"
            cores = float(decoded.get("coreCount") or 1)
            ram[i] = float(value) / cores if per_job else float(value)
        value = decoded.get("cpuTime")
        if isinstance(value, int | float) and value > 0:
            scale = 1e-3 if str(decoded.get("cpuTimeUnit", "")).startswith("m") else 1.0
            cpu[i] = float(value) * scale
    return ram, cpu


def _submit_seconds(tasks: pd.DataFrame) -> np.ndarray:
    if "creationdate" not in tasks.columns:
        return np.zeros(len(tasks))
    created = pd.to_datetime(tasks["creationdate"], errors="coerce")
    if created.isna().all():
        return np.zeros(len(tasks))
    seconds = (created - created.min()).dt.total_seconds().to_numpy(dtype=float)
    return np.nan_to_num(seconds, nan=0.0)


def build_workload(
    jobs: pd.DataFrame,
    tasks: pd.DataFrame,
    settings: Settings,
    taskparams: pd.Series | None = None,
) -> Workload:
    """The replay's workload from jobsarchived4-like ``jobs`` and jedi_tasks-like ``tasks``."""
    if tasks.empty or jobs.empty:
        raise WorkloadError("the history is empty: no tasks or no jobs to replay")
    flagged = scout_jobs(jobs, settings.replay.n_scouts)["pandaid"]
    units = finished_jobs(jobs).copy()
    units = units[units["jeditaskid"].isin(tasks["jeditaskid"])]
    if units.empty:
        raise WorkloadError("no finished job with a positive wall time in the history")
    units["_scout"] = units["pandaid"].isin(flagged)
    units = units.sort_values(["jeditaskid", "_scout", "pandaid"], ascending=[True, False, True])
    tasks = tasks[tasks["jeditaskid"].isin(units["jeditaskid"])]
    tasks = tasks.sort_values("jeditaskid").reset_index(drop=True)  # the units' order
    position = pd.Index(tasks["jeditaskid"]).get_indexer(units["jeditaskid"])
    frame = job_frame(units, tasks, settings)
    frame = JobFrame(**{**_frame_dict(frame), "task_id": position.astype(np.int64)})
    n_units = np.bincount(position, minlength=len(tasks))
    is_scout = units["_scout"].to_numpy(dtype=bool)
    request_ram, request_cpu = _requests(tasks, taskparams)
    task_priority, unit_priority = _priorities(units, tasks, position, is_scout)
    kind_source = next((c for c in ("processingtype", "tasktype") if c in tasks.columns), None)
    kind = (
        tasks[kind_source].fillna("unknown").astype(str).to_numpy(dtype=object)
        if kind_source
        else np.full(len(tasks), "unknown", dtype=object)
    )
    return Workload(
        task_ids=tasks["jeditaskid"].to_numpy(dtype=np.int64),
        submit_s=_submit_seconds(tasks),
        first_unit=(np.cumsum(n_units) - n_units).astype(np.int64),
        n_units=n_units.astype(np.int64),
        n_scouts=np.bincount(position[is_scout], minlength=len(tasks)).astype(np.int64),
        request_ram=request_ram,
        request_cputime=request_cpu,
        base_ram_mb=_task_numbers(tasks, "baseramcount", 0.0),
        base_walltime_s=_task_numbers(tasks, "basewalltime", settings.panda.base_walltime_s),
        cpu_efficiency=_task_numbers(tasks, "cpuefficiency", settings.panda.cpu_efficiency_percent),
        kind=kind,
        task=position.astype(np.int64),
        is_scout=is_scout,
        cores=frame.cores.astype(float),
        wall_s=frame.wall_s.astype(float),
        need_mb=np.nan_to_num(frame.maxpss_kb, nan=0.0) / 1024.0,
        nevents=frame.nevents.astype(float),
        core_power=frame.core_power.astype(float),
        frame=frame,
        task_priority=task_priority,
        unit_priority=unit_priority,
        input_files=_unit_numbers(units, "ninputdatafiles"),
    )


class TaskEstimator:
    """ramCount and cpuTime of tasks from some of their finished units: the target code."""

    def __init__(self, workload: Workload, settings: Settings) -> None:
        estimators = panda_estimators(settings)
        self._memory: TargetEstimator = estimators["memory"]
        self._cputime: TargetEstimator = estimators["cputime"]
        self._frame = workload.frame

    def __call__(self, units: np.ndarray) -> tuple[dict[int, float], dict[int, float]]:
        """Per task index: (ramCount MB/core, cpuTime HS06·s/event) from the given units."""
        frame = _frame_rows(self._frame, np.asarray(units, dtype=np.int64))
        out = []
        for estimator in (self._memory, self._cputime):
            tasks, values = estimator.estimate_arrays(frame)
            out.append(dict(zip(tasks.tolist(), values.tolist(), strict=True)))
        return out[0], out[1]
