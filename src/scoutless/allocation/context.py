"""What a job of a task is: the cost model's input, from either of its two sources.

The service and the listener read it from a task's submission features, the same typed
features the models see (``corecount``, ``nevents_per_job``, ``cpuefficiency``,
``basewalltime``, the input's events and files; :func:`job_context`): PanDA's defaults fill
what a task leaves unset, and a task split by files (no ``nevents_per_job``) has the input's
events shared among its jobs (one event a job would make every cpuTime a walltime of
seconds); the site's corePower is unknown at submission, so PanDA's default stands in. The replay reads it from a history's jobs (:func:`history_job_context`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from scoutless.config import PandaDefaults
from scoutless.fast_paths import current

#: a job's walltime when no walltime prediction is at hand (s): a typical grid job
DEFAULT_JOB_WALL_S = 6 * 3600.0
#: a history's job walltime where a strategy's distribution has none (one hour): slack is
#: priced per hour held
HISTORY_FALLBACK_WALL_S = 3600.0

#: a task's typed numerical features by name (``InspectedFeatures.numbers``)
Numbers = Mapping[str, np.ndarray]
#: per task a job's walltime (s), or None for the default
Wall = np.ndarray | None


@dataclass(frozen=True)
class JobContext:
    """Per task (arrays of one length): what a job of it is, as known at submission."""

    cores: np.ndarray
    #: expected walltime of one job, seconds (the walltime target's median where predicted)
    wall_s: np.ndarray
    #: events per job, HS06 per core, cpuEfficiency (%), baseWalltime (s): getJobMaxWalltime
    nevents: np.ndarray
    core_power: np.ndarray
    cpu_efficiency: np.ndarray
    base_walltime_s: np.ndarray
    #: jobs the task will have (1 where unknown)
    n_jobs: np.ndarray

    def take(self, rows: np.ndarray | slice) -> JobContext:
        return JobContext(**{k: np.asarray(v)[rows] for k, v in self.__dict__.items()})

    def __len__(self) -> int:
        return len(self.cores)


def _numbers(numbers: Numbers, name: str, n: int) -> np.ndarray:
    """A feature's float values, NaN where the task has none (the default made only when
    needed: a served task has every one)."""
    values = numbers.get(name)
    return np.full(n, np.nan) if values is None else np.asarray(values, dtype=float)


def _n_jobs(numbers: Numbers, n: int) -> np.ndarray:
    """Jobs a task will have: input events ÷ events per job, else files ÷ files per job."""
    with np.errstate(divide="ignore", invalid="ignore"):
        by_events = _numbers(numbers, "input_nevents", n) / _numbers(numbers, "nevents_per_job", n)
        by_files = _numbers(numbers, "input_nfiles", n) / _numbers(numbers, "nfiles_per_job", n)
    jobs = np.where(np.isfinite(by_events) & (by_events > 0), by_events, by_files)
    return np.where(np.isfinite(jobs) & (jobs >= 1), np.ceil(jobs), 1.0)


def job_context(
    numbers: Numbers,
    n: int,
    defaults: PandaDefaults,
    wall_s: np.ndarray | None = None,
) -> JobContext:
    """Per task, the job the cost model prices (``wall_s``: e.g. the walltime target's
    median; a typical grid job's where absent)."""
    read = _few_job_context if n <= current().few_tasks else _array_job_context
    return read(numbers, n, defaults, wall_s)


def _fallback(defaults: PandaDefaults) -> dict[str, float]:
    """What stands in for each feature a task leaves unset (or not positive and finite)."""
    return {"corecount": 1.0, "nevents_per_job": math.nan,  # unset: from the input's events
            "cpuefficiency": defaults.cpu_efficiency_percent,
            "basewalltime": defaults.base_walltime_s}  # fmt: skip


def _array_job_context(
    numbers: Numbers, n: int, defaults: PandaDefaults, wall_s: Wall
) -> JobContext:
    """:func:`job_context`'s definition, in numpy."""
    wall = np.full(n, DEFAULT_JOB_WALL_S) if wall_s is None else np.asarray(wall_s, float)
    # each feature's positive, finite values, else its default: the four in one pass
    cores, nevents, efficiency, base = _columns(numbers, n, _fallback(defaults))
    n_jobs = _n_jobs(numbers, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        shared = _numbers(numbers, "input_nevents", n) / n_jobs  # the input's events per job
    shared = np.where(np.isfinite(shared) & (shared > 0), shared, 1.0)
    return JobContext(
        cores=cores,
        wall_s=np.where(np.isfinite(wall) & (wall > 0), wall, DEFAULT_JOB_WALL_S),
        nevents=np.where(np.isnan(nevents), shared, nevents),
        core_power=np.full(n, defaults.core_power_hs06),
        cpu_efficiency=efficiency,
        base_walltime_s=base,
        n_jobs=n_jobs,
    )


def _columns(numbers: Numbers, n: int, defaults: dict[str, float]) -> np.ndarray:
    """(features, n) each feature's values where positive and finite, else its default
    (element by element: each row is what the feature alone gives)."""
    values = np.stack([_numbers(numbers, name, n) for name in defaults])
    fallback = np.array(list(defaults.values()), dtype=float)[:, None]
    return np.where(np.isfinite(values) & (values > 0), values, fallback)


def _few_job_context(numbers: Numbers, n: int, defaults: PandaDefaults, wall_s: Wall) -> JobContext:
    """:func:`_array_job_context` of a few tasks in plain Python floats, where a dozen numpy
    calls cost more than the arithmetic: the same comparisons and IEEE divisions, so the
    same numbers (tests/allocation/test_fast_paths.py)."""
    cores, nevents, efficiency, base = (
        _positive(_floats(numbers, name, n), default)
        for name, default in _fallback(defaults).items()
    )
    wall = [DEFAULT_JOB_WALL_S] * n if wall_s is None else np.asarray(wall_s, float).tolist()
    events, files = (
        map(_ratio, _floats(numbers, f"input_n{unit}", n), _floats(numbers, f"n{unit}_per_job", n))
        for unit in ("events", "files")
    )
    jobs = [e if 0 < e < math.inf else f for e, f in zip(events, files, strict=True)]
    n_jobs = [float(math.ceil(j)) if 1 <= j < math.inf else 1.0 for j in jobs]
    shared = [_positive([e / j], 1.0)[0]
              for e, j in zip(_floats(numbers, "input_nevents", n), n_jobs, strict=True)]  # fmt: skip
    return JobContext(
        cores=np.array(cores),
        wall_s=np.array(_positive(wall, DEFAULT_JOB_WALL_S)),
        nevents=np.array([s if v != v else v for v, s in zip(nevents, shared, strict=True)]),
        core_power=np.array([float(defaults.core_power_hs06)] * n),
        cpu_efficiency=np.array(efficiency),
        base_walltime_s=np.array(base),
        n_jobs=np.array(n_jobs),
    )


def _floats(numbers: Numbers, name: str, n: int) -> list[float]:
    """:func:`_numbers` as a list of floats."""
    return _numbers(numbers, name, n).tolist()


def _positive(values: list[float], default: float) -> list[float]:
    """Each value where positive and finite (NaN compares false), else ``default``."""
    default = float(default)
    return [v if 0 < v < math.inf else default for v in values]


def _ratio(top: float, bottom: float) -> float:
    """``top / bottom`` as numpy divides (IEEE); NaN for a zero divisor, which numpy makes
    inf or NaN: either is refused as a count of jobs, as NaN is."""
    return top / bottom if bottom != 0 else math.nan


def history_job_context(
    task: np.ndarray, n_tasks: int, cores: np.ndarray, nevents: np.ndarray,
    core_power: np.ndarray, cpu_efficiency: np.ndarray, base_walltime_s: np.ndarray,
    n_jobs: np.ndarray, wall_s: np.ndarray,
) -> JobContext:  # fmt: skip
    """Per task of a history: its jobs' median cores, events and corePower (per job, of
    task ``task``), its cpuEfficiency, baseWalltime and jobs as recorded (per task), and
    ``wall_s`` per job (:data:`HISTORY_FALLBACK_WALL_S` where not positive and finite)."""
    per_task = (
        pd.DataFrame({"cores": cores, "nevents": nevents, "power": core_power})
        .groupby(task)
        .median()
        .reindex(np.arange(n_tasks))
    )
    wall = np.asarray(wall_s, dtype=float)
    return JobContext(
        cores=np.nan_to_num(per_task["cores"].to_numpy(float), nan=1.0),
        wall_s=np.where(np.isfinite(wall) & (wall > 0), wall, HISTORY_FALLBACK_WALL_S),
        nevents=per_task["nevents"].to_numpy(float),
        core_power=per_task["power"].to_numpy(float),
        cpu_efficiency=np.asarray(cpu_efficiency, float),
        base_walltime_s=np.asarray(base_walltime_s, float),
        n_jobs=np.asarray(n_jobs, float),
    )
