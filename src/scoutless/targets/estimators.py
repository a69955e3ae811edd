"""PanDA's task targets as small composable pieces: per-job value → reduce → adjust.

Like the Kubernetes VPA recommender, each piece does one thing and the wiring sits in one
place (:func:`panda_estimators`), whose comments say what each choice does. Everything is
vectorised over all jobs of all tasks at once; no piece does I/O.

Per DESIGN.md §2 (panda-server ``getScoutJobData_JEDI``; percentiles interpolate linearly
between order statistics, exactly as JEDI's ``percentile`` helper):

========  ==============================================================  =====================
target    per job                                                          task
========  ==============================================================  =====================
memory    ceil((maxPSS_kB − baseRamCount_MB·1024) / cores)                 P75 ×1.10 /1024, floor
cputime   max(0, wall − baseWalltime)·corePower·cores·cpuEff/100 / nEvents P95 ×1.5
          (jobs with nEvents ≥ 10·cores or wall ≥ 6 h)
io        (inputBytes + outputBytes) / 1024 / wall / cores                 max
walltime  endtime − starttime                                              P95
========  ==============================================================  =====================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pandas as pd

from scoutless.config import Settings
from scoutless.targets.spec import TARGET_NAMES

# --------------------------------------------------------------------------- job frame


@dataclass(frozen=True)
class JobFrame:
    """Per-job arrays the per-job pieces read, with the task's parameters broadcast."""

    task_id: np.ndarray
    cores: np.ndarray
    wall_s: np.ndarray
    maxpss_kb: np.ndarray
    nevents: np.ndarray
    io_kb: np.ndarray
    core_power: np.ndarray
    base_ram_mb: np.ndarray
    base_walltime_s: np.ndarray
    cpu_efficiency: np.ndarray


def _col(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)


def wall_seconds(jobs: pd.DataFrame) -> np.ndarray:
    """endtime − starttime in seconds (NaN when either is missing)."""
    start = pd.to_datetime(jobs["starttime"], errors="coerce")
    end = pd.to_datetime(jobs["endtime"], errors="coerce")
    return (end - start).dt.total_seconds().to_numpy(dtype=float)


def job_frame(jobs: pd.DataFrame, tasks: pd.DataFrame, settings: Settings) -> JobFrame:
    """Broadcast task parameters onto jobs, filling PanDA's defaults where unset."""
    defaults = settings.panda
    tasks = tasks.set_index("jeditaskid") if "jeditaskid" in tasks.columns else tasks
    task_id = jobs["jeditaskid"].to_numpy(dtype=np.int64)

    position = tasks.index.get_indexer(task_id)  # -1: job of a task not in `tasks`

    def per_task(name: str, default: float) -> np.ndarray:
        if name not in tasks.columns:
            return np.full(len(jobs), default)
        values = np.append(
            pd.to_numeric(tasks[name], errors="coerce").to_numpy(dtype=float), np.nan
        )
        mapped = values[position]
        return np.where(np.isnan(mapped), default, mapped)

    cores = _col(jobs, "actualcorecount")
    cores = np.where(np.isnan(cores) | (cores <= 0), _col(jobs, "corecount"), cores)
    cores = np.where(np.isnan(cores) | (cores <= 0), per_task("corecount", 1.0), cores)
    cores = np.where(cores <= 0, 1.0, cores)
    hs06 = _col(jobs, "hs06")
    core_power = np.where(hs06 > 0, hs06 / cores, defaults.core_power_hs06)
    io_bytes = np.nan_to_num(_col(jobs, "inputfilebytes")) + np.nan_to_num(
        _col(jobs, "outputfilebytes")
    )
    cpu_eff = per_task("cpuefficiency", defaults.cpu_efficiency_percent)
    return JobFrame(
        task_id=task_id,
        cores=cores,
        wall_s=wall_seconds(jobs),
        maxpss_kb=_col(jobs, "maxpss"),
        nevents=_col(jobs, "nevents"),
        io_kb=io_bytes / 1024.0,
        core_power=core_power,
        base_ram_mb=per_task("baseramcount", 0.0),
        base_walltime_s=per_task("basewalltime", defaults.base_walltime_s),
        cpu_efficiency=np.where(cpu_eff > 0, cpu_eff, defaults.cpu_efficiency_percent),
    )


# --------------------------------------------------------------------------- per-job values


class PerJob(Protocol):
    def __call__(self, jobs: JobFrame) -> np.ndarray:
        """One value per job; NaN where the job does not count for this target."""
        ...


def memory_kb_per_core(jobs: JobFrame) -> np.ndarray:
    return np.ceil((jobs.maxpss_kb - jobs.base_ram_mb * 1024.0) / jobs.cores)


@dataclass(frozen=True)
class CpuTimePerEvent:
    """HS06·s per event of jobs whose event count (or length) makes the ratio meaningful."""

    min_events_per_core: int = 10
    long_job_s: float = 6 * 3600.0

    def __call__(self, jobs: JobFrame) -> np.ndarray:
        busy = np.maximum(0.0, jobs.wall_s - jobs.base_walltime_s)
        hs06s = busy * jobs.core_power * jobs.cores * jobs.cpu_efficiency / 100.0
        with np.errstate(divide="ignore", invalid="ignore"):
            value = hs06s / jobs.nevents
        eligible = (jobs.nevents >= self.min_events_per_core * jobs.cores) | (
            jobs.wall_s >= self.long_job_s
        )
        return np.where(eligible & (jobs.nevents > 0), value, np.nan)


def io_kb_per_s_per_core(jobs: JobFrame) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(jobs.wall_s > 0, jobs.io_kb / jobs.wall_s / jobs.cores, np.nan)


def wall_time_s(jobs: JobFrame) -> np.ndarray:
    return jobs.wall_s


# --------------------------------------------------------------------------- reducers


class Reducer(Protocol):
    def arrays(self, task_id: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sorted task ids, one value each) from the non-NaN values of their jobs."""
        ...

    def __call__(self, task_id: np.ndarray, values: np.ndarray) -> pd.Series:
        """The same as a Series indexed by task id."""
        ...


def _grouped(task_id: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
    """Non-NaN values sorted by (task, value); task ids, group starts and counts."""
    ok = ~np.isnan(values)
    ids, v = task_id[ok], values[ok]
    order = np.lexsort((v, ids))
    ids, v = ids[order], v[order]
    tasks, starts, counts = np.unique(ids, return_index=True, return_counts=True)
    return v, tasks, starts, counts


@dataclass(frozen=True)
class Percentile:
    """Linear interpolation between order statistics (JEDI's ``percentile``)."""

    percent: float

    def arrays(self, task_id: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # numpy rather than groupby().quantile(): the replay calls this every simulated
        # 10 minutes on a few jobs, where pandas' fixed cost per call dominated
        v, tasks, starts, counts = _grouped(task_id, values)
        h = (counts - 1) * (self.percent / 100.0)
        lo = np.floor(h).astype(np.int64)
        hi = np.minimum(lo + 1, counts - 1)
        low_value = v[starts + lo]
        return tasks, low_value + (h - lo) * (v[starts + hi] - low_value)

    def __call__(self, task_id: np.ndarray, values: np.ndarray) -> pd.Series:
        tasks, result = self.arrays(task_id, values)
        return pd.Series(result, index=tasks)


@dataclass(frozen=True)
class Maximum:
    def arrays(self, task_id: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v, tasks, starts, counts = _grouped(task_id, values)
        return tasks, v[starts + counts - 1]

    def __call__(self, task_id: np.ndarray, values: np.ndarray) -> pd.Series:
        tasks, result = self.arrays(task_id, values)
        return pd.Series(result, index=tasks)


# --------------------------------------------------------------------------- adjustments


class Adjustment(Protocol):
    def __call__(self, values: np.ndarray) -> np.ndarray:
        """Elementwise on task values (numpy arrays; Series work too)."""
        ...


@dataclass(frozen=True)
class Margin:
    factor: float

    def __call__(self, values: np.ndarray) -> np.ndarray:
        return values * self.factor


@dataclass(frozen=True)
class Scale:
    """Unit change, e.g. kB → MB."""

    divisor: float

    def __call__(self, values: np.ndarray) -> np.ndarray:
        return values / self.divisor


@dataclass(frozen=True)
class Floor:
    minimum: float

    def __call__(self, values: np.ndarray) -> np.ndarray:
        return np.maximum(values, self.minimum)  # NaN stays NaN


# --------------------------------------------------------------------------- estimator


@dataclass(frozen=True)
class TargetEstimator:
    """per-job value → reduce over the task's jobs → adjustments, in order."""

    per_job: PerJob
    reduce: Reducer
    adjust: tuple[Adjustment, ...] = field(default=())

    def estimate(self, jobs: JobFrame) -> pd.Series:
        tasks, values = self.estimate_arrays(jobs)
        return pd.Series(values, index=tasks)

    def estimate_arrays(self, jobs: JobFrame) -> tuple[np.ndarray, np.ndarray]:
        """(sorted task ids, values): :meth:`estimate` without pandas, for hot loops."""
        tasks, values = self.reduce.arrays(jobs.task_id, self.per_job(jobs))
        for step in self.adjust:
            values = step(values)
        return tasks, values


def panda_estimators(settings: Settings) -> dict[str, TargetEstimator]:
    """The wiring: PanDA's choices for each target, in one place."""
    t, p = settings.targets, settings.panda
    return {
        # P75 keeps a few leaky jobs from inflating every job's request; the 10 % margin
        # absorbs run-to-run spread; the floor is JEDI's SCOUT_RAMCOUNT_MIN.
        "memory": TargetEstimator(
            memory_kb_per_core,
            Percentile(t.memory_percentile),
            (Margin(t.memory_margin), Scale(1024.0), Floor(p.min_ramcount_mb_per_core)),
        ),
        # P95 of eligible jobs, ×1.5 so nearly every job fits the walltime JEDI derives.
        "cputime": TargetEstimator(
            CpuTimePerEvent(t.cputime_min_events_per_core, t.cputime_long_job_s),
            Percentile(t.cputime_percentile),
            (Margin(t.cputime_margin),),
        ),
        # Brokerage avoids heavy WAN traffic, so the worst job counts.
        "io": TargetEstimator(io_kb_per_s_per_core, Maximum()),
        # Queue length: the P95 job must fit.
        "walltime": TargetEstimator(wall_time_s, Percentile(t.walltime_percentile)),
    }


# --------------------------------------------------------------------------- job selection


def finished_jobs(jobs: pd.DataFrame) -> pd.DataFrame:
    """Jobs that finished with a positive wall time: the only ones that measure a need."""
    ok = jobs["jobstatus"].eq("finished") if "jobstatus" in jobs.columns else True
    wall = wall_seconds(jobs)
    return jobs[ok & (wall > 0)]


def scout_jobs(jobs: pd.DataFrame, n_scouts: int) -> pd.DataFrame:
    """The task's scouts: jobs flagged 'sj' in specialhandling, else its first N by pandaid."""
    if "specialhandling" in jobs.columns:
        flagged = jobs["specialhandling"].fillna("").astype(str).str.contains("sj", regex=False)
        if flagged.any():
            return jobs[flagged]
    ordered = jobs.sort_values(["jeditaskid", "pandaid"])
    return ordered.groupby("jeditaskid", sort=False).head(n_scouts)


def compute_task_targets(
    jobs: pd.DataFrame,
    tasks: pd.DataFrame,
    *,
    settings: Settings,
    scouts_only: bool = False,
) -> pd.DataFrame:
    """Task values of the four targets from measured jobs (index: jeditaskid).

    ``scouts_only`` reproduces PanDA's incumbent estimate from the first scouts. Tasks with
    fewer than ``settings.targets.min_jobs_per_task`` finished jobs (1 for scouts) get NaN.
    """
    selected = scout_jobs(jobs, settings.targets.n_scouts) if scouts_only else jobs
    selected = finished_jobs(selected)
    frame = job_frame(selected, tasks, settings)
    n_jobs = pd.Series(frame.task_id).value_counts().rename("n_jobs")
    out = pd.DataFrame(
        {name: est.estimate(frame) for name, est in panda_estimators(settings).items()}
    )
    out = out.reindex(columns=list(TARGET_NAMES)).join(n_jobs, how="outer")
    out["n_jobs"] = out["n_jobs"].fillna(0).astype(int)
    min_jobs = 1 if scouts_only else settings.targets.min_jobs_per_task
    out.loc[out["n_jobs"] < min_jobs, list(TARGET_NAMES)] = np.nan
    out.index.name = "jeditaskid"
    return out
