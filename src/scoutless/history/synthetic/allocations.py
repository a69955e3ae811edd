"""Each job's allocation as PanDA records it (``minramcount``, ``maxwalltime``,
``maxcpucount``), consistent with what the job did.

Scouts run with what the submitter asked (``ramCount``, else PanDA's 2000 MB per core) and
a queue's long walltime limit; the avalanche with what the scouts measured (the task's
``ramcount`` and ``walltime`` after scouting, walltime with a margin). A finished job
stayed within its limits (the limit is raised to its usage where the draw fell short); a
memory-killed attempt used more than its memory limit, a walltime-killed one ran until its
walltime limit. ``maxcpucount`` is the walltime limit (PanDA's expected execution time).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

DEFAULT_RAM_PER_CORE_MB = 2000.0  # PanDA's ramCount when a task gives none
SCOUT_WALLTIME_S = 48 * 3600.0  # a long queue's walltime limit: scouts know no better
AVALANCHE_WALLTIME_MARGIN = 1.5
MEMORY_KINDS = (3, 4)  # attempts.FAILURES rows of a memory kill
WALLTIME_KIND = 5


def allocations(rows: dict[str, np.ndarray], tasks: pd.DataFrame, requested_mb: np.ndarray):  # type: ignore[no-untyped-def]
    """(minramcount MB, maxwalltime s, maxcpucount s) per job row of ``block._job_rows``."""
    t = rows["task"]
    scout = rows["is_scout"]
    requested = np.where(np.isfinite(requested_mb), requested_mb, DEFAULT_RAM_PER_CORE_MB)[t]
    measured_mb = tasks["ramcount"].to_numpy(dtype=float, na_value=np.nan)[t]
    measured_wall = tasks["walltime"].to_numpy(dtype=float, na_value=np.nan)[t]
    per_core = np.where(scout | ~np.isfinite(measured_mb), requested, measured_mb)
    base = np.nan_to_num(np.asarray(rows["base_mb"], dtype=float))
    ram = np.ceil(per_core * rows["cores"] + base)
    wall_limit = np.where(
        scout | ~np.isfinite(measured_wall),
        SCOUT_WALLTIME_S,
        np.ceil(measured_wall * AVALANCHE_WALLTIME_MARGIN),
    )
    used_mb = np.ceil(rows["maxpss"] / 1024.0)
    finished = rows["status_finished"]
    ram = np.where(finished, np.maximum(ram, used_mb), ram)
    memory_kill = np.isin(rows["failure"], MEMORY_KINDS)
    ram = np.where(memory_kill, np.minimum(ram, np.floor(used_mb / 1.05)), ram)
    wall_limit = np.where(finished, np.maximum(wall_limit, rows["wall"]), wall_limit)
    wall_limit = np.where(rows["failure"] == WALLTIME_KIND, rows["wall"], wall_limit)
    ram, wall_limit = ram.astype(np.int64), wall_limit.astype(np.int64)
    return ram, wall_limit, wall_limit.copy()
