"""PanDA's execution, failure and retry rules as small pure functions (no state, no I/O).

Sources (panda-server): ``CoreUtils.getJobMaxWalltime`` (a job's walltime from the task's
cpuTime), ``task_complex_module`` (the early avalanche at totFinished ≥ totJobs·5/10) and
``setScoutJobData_JEDI`` (exhausted when the scouts' ramCount jumps over 4 GB/core);
``ResourceSpec.match_job`` (a job's resource type); pandajedi ``AtlasProdJobBroker``
(which queues a job's walltime fits). The memory retry (``retryModule`` →
``increaseRamLimitJobJEDI``: the ladder per input file, the >30 % task raise) is
:mod:`scoutless.replay.ladder`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from scoutless.jedi.units import MEMORY_COMPENSATION

MEMORY_KILL = 1
WALLTIME_KILL = 2
SUCCESS = 0

#: AtlasProdJobBroker sends scouts (and walltime-undefined jobs) only to queues whose
#: maxtime allows 24 h at 10 HS06 a core ("criteria=-scout_walltime", "-min_walltime")
SCOUT_MIN_HS06_S = 24 * 3600.0 * 10.0


def matched_ram_per_core(ram_mb_per_core: float, cores: float, base_mb: float) -> float:
    """The MB/core PanDA matches to a resource type (``ResourceSpec.match_job``):
    (ramCount × cores + baseRamCount) ÷ cores, compensated."""
    per_core = (ram_mb_per_core * cores + base_mb) / max(cores, 1.0)
    return per_core * MEMORY_COMPENSATION


def resource_type(
    cores: float, ram_mb_per_core: float, types: Sequence[tuple[str, float, bool]]
) -> int:
    """Index of the resource type a job goes to: single/multi-core, the smallest memory class
    that holds its ramCount (the largest when none does). ``types``: (name, MB/core, multicore),
    sorted by MB/core."""
    multicore = cores > 1
    chosen = -1
    for i, (_, mb_per_core, is_multi) in enumerate(types):
        if is_multi != multicore:
            continue
        chosen = i
        if ram_mb_per_core <= mb_per_core:
            return i
    return chosen


def need_ram_per_core(need_mb: np.ndarray, base_mb: np.ndarray, cores: np.ndarray) -> np.ndarray:
    """The ramCount (MB/core) whose allocation is exactly a job's maxPSS: baseRamCount +
    cores × ramCount = need (:func:`allocation_mb`), at least 1 MB a core."""
    return np.maximum((need_mb - base_mb) / np.maximum(cores, 1.0), 1.0)


def need_slot_mb(
    need_mb: np.ndarray, base_mb: np.ndarray, cores: np.ndarray,
    types: Sequence[tuple[str, float, bool]],
) -> np.ndarray:  # fmt: skip
    """Per job, the MB/core of the slot its own need requires (:func:`resource_type` of
    :func:`need_ram_per_core`): the share a job holds whatever it is given. ``types`` as
    in :func:`resource_type`."""
    cores = np.asarray(cores, dtype=float)
    matched = (need_ram_per_core(need_mb, base_mb, cores) * np.maximum(cores, 1.0) + base_mb)
    matched = matched / np.maximum(cores, 1.0) * MEMORY_COMPENSATION
    out = np.zeros(len(cores))
    for multicore in (False, True):
        sizes = np.sort([mb for _, mb, multi in types if multi == multicore])
        rows = (cores > 1) == multicore
        if sizes.size and rows.any():
            at = np.minimum(np.searchsorted(sizes, matched[rows], side="left"), sizes.size - 1)
            out[rows] = sizes[at]
    return out


def allocation_mb(
    ram_mb_per_core: float, slot_mb_per_core: float, cores: float, base_mb: float
) -> float:
    """Memory a job may use: baseRamCount + cores × (its ramCount, at least the slot's)."""
    return base_mb + cores * max(ram_mb_per_core, slot_mb_per_core)


def memory_kill_time(
    wall_s: float, need_mb: float, allocation: float, factor: float
) -> float | None:
    """When the pilot kills a job whose PSS exceeds factor × allocation, or None if it survives.

    PSS is taken to grow linearly to maxPSS over the job, so it crosses the limit at
    wall × limit / maxPSS.
    """
    limit = factor * allocation
    if need_mb <= limit:
        return None
    return wall_s * limit / need_mb


def job_max_walltime(
    cputime: float,
    nevents: float,
    cores: float,
    core_power: float,
    cpu_efficiency: float,
    base_walltime_s: float,
    queue_maxtime_s: float,
) -> float:
    """``getJobMaxWalltime``: cpuTime × nEvents / cores / corePower / eff + baseWalltime,
    the queue's maxtime when the task has no cpuTime (and never above it)."""
    if not cputime > 0 or not nevents > 0:
        return queue_maxtime_s
    wall = cputime * nevents / max(cores, 1.0) / core_power
    if cpu_efficiency > 0:
        wall /= cpu_efficiency / 100.0
    return min(wall + base_walltime_s, queue_maxtime_s)


def avalanche_due(n_finished: int, n_scouts: int, n_resolved: int, min_share: float) -> bool:
    """Early avalanche: ≥ min_share of the scouts finished, or every scout is resolved."""
    return n_finished >= math.ceil(n_scouts * min_share - 1e-9) or n_resolved >= n_scouts


def scouts_broken(n_ok: int, n_failed_attempts: int, min_success_rate: float | None) -> bool:
    """No scout succeeded, or fewer than the task's scoutSuccessRate did."""
    if n_ok == 0:
        return True
    if min_success_rate is None:
        return False
    return n_ok / (n_ok + n_failed_attempts) < min_success_rate


def scouts_exhausted(
    requested_mb_per_core: float,
    scout_mb_per_core: float,
    threshold_mb_per_core: float,
    n_new_jobs: int,
    min_new_jobs: int,
) -> bool:
    """The scouts' ramCount jumped above the threshold while the request was below it."""
    return (
        n_new_jobs > min_new_jobs
        and requested_mb_per_core < threshold_mb_per_core < scout_mb_per_core
    )


def needs_long_queue(
    limit_s: float,
    short_maxtime_s: float,
    scout: bool,
    core_power: float,
    cpu_efficiency: float,
    base_walltime_s: float,
) -> bool:
    """A job can only go to the long queue: its walltime limit exceeds the short queue's
    maxtime (the broker's ``-shortwalltime``), or it is a scout or has no limit (``limit_s``
    inf: no cpuTime, it gets its queue's maxtime) and the short queue does not give it the
    broker's 24 h × 10 HS06: (maxtime − baseWalltime) × corePower × cpuEfficiency."""
    if limit_s != math.inf:
        if limit_s > short_maxtime_s:
            return True
        if not scout:
            return False
    hs06_s = (short_maxtime_s - base_walltime_s) * core_power * cpu_efficiency / 100.0
    return hs06_s < SCOUT_MIN_HS06_S
