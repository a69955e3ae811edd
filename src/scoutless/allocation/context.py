"""What a job of a task is, from the task's submission features: the cost model's input.

The service and the listener read it from the same typed features the models see
(``corecount``, ``nevents_per_job``, ``cpuefficiency``, ``basewalltime``, the input's
events and files); PanDA's defaults fill what a task leaves unset; the site's corePower is
unknown at submission, so PanDA's default stands in.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scoutless.allocation.costs import JobContext
from scoutless.config import PandaDefaults

#: a job's walltime when no walltime prediction is at hand (s): a typical grid job
DEFAULT_JOB_WALL_S = 6 * 3600.0


def _numbers(numbers: Mapping[str, np.ndarray], name: str, n: int) -> np.ndarray:
    """A feature's float values, NaN where the task has none (the default made only when
    needed: a served task has every one)."""
    values = numbers.get(name)
    return np.full(n, np.nan) if values is None else np.asarray(values, dtype=float)


def _n_jobs(numbers: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    """Jobs a task will have: input events ÷ events per job, else files ÷ files per job."""
    with np.errstate(divide="ignore", invalid="ignore"):
        by_events = _numbers(numbers, "input_nevents", n) / _numbers(numbers, "nevents_per_job", n)
        by_files = _numbers(numbers, "input_nfiles", n) / _numbers(numbers, "nfiles_per_job", n)
    jobs = np.where(np.isfinite(by_events) & (by_events > 0), by_events, by_files)
    return np.where(np.isfinite(jobs) & (jobs >= 1), np.ceil(jobs), 1.0)


def job_context(
    numbers: Mapping[str, np.ndarray],
    n: int,
    defaults: PandaDefaults,
    wall_s: np.ndarray | None = None,
) -> JobContext:
    """Per task, the job the cost model prices (``wall_s``: e.g. the walltime target's
    median; a typical grid job's where absent)."""
    wall = np.full(n, DEFAULT_JOB_WALL_S) if wall_s is None else np.asarray(wall_s, float)
    # each feature's positive, finite values, else its default: the four in one pass
    cores, nevents, efficiency, base = _columns(
        numbers, n, {"corecount": 1.0, "nevents_per_job": 1.0,
                     "cpuefficiency": defaults.cpu_efficiency_percent,
                     "basewalltime": defaults.base_walltime_s},
    )  # fmt: skip
    return JobContext(
        cores=cores,
        wall_s=np.where(np.isfinite(wall) & (wall > 0), wall, DEFAULT_JOB_WALL_S),
        nevents=nevents,
        core_power=np.full(n, defaults.core_power_hs06),
        cpu_efficiency=efficiency,
        base_walltime_s=base,
        n_jobs=_n_jobs(numbers, n),
    )


def _columns(numbers: Mapping[str, np.ndarray], n: int, defaults: dict[str, float]) -> np.ndarray:
    """(features, n) each feature's values where positive and finite, else its default
    (element by element: each row is what the feature alone gives)."""
    values = np.stack([_numbers(numbers, name, n) for name in defaults])
    fallback = np.array(list(defaults.values()), dtype=float)[:, None]
    return np.where(np.isfinite(values) & (values > 0), values, fallback)
