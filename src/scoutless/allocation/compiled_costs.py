"""The cost grids priced by the compiled kernels (:mod:`.cost_kernels`): each target's
per-task arguments laid out once, the grid handed over, the cost and the kill (as 0/1) in
one pass, equal bit for bit to :mod:`.costs`' numpy functions; None wherever no kernel is
loaded or a shape is not the grid's, and numpy prices it.
"""

from __future__ import annotations

import math

import numpy as np

from scoutless.allocation import cost_kernels
from scoutless.allocation.context import JobContext
from scoutless.allocation.site import SiteRules, congestion, queue_wait_h, room_delay_hours
from scoutless.config import Prices


def _compiled_grid(
    target: str, alloc: np.ndarray, need: np.ndarray, job: JobContext
) -> tuple | None:
    """(kernel, grid): the target's compiled kernel and the grid laid out for it
    (:func:`.cost_kernels.outer`); None where the kernel is
    not loaded or the shapes are not the grid's (numpy prices it)."""
    kernel = cost_kernels.kernel(target)
    grid = None if kernel is None else cost_kernels.outer(alloc, need, len(job))
    return None if grid is None else (kernel, grid)


def memory_compiled(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules, prices: Prices,
    task_args: tuple | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:  # fmt: skip
    """:func:`.costs.memory_cost` and :func:`.costs.memory_killed` (as 0/1) at once; None
    where the shapes are not the grid's (:func:`.cost_kernels.outer`). ``task_args``:
    :func:`memory_args` of these job, rules and prices, where made already."""
    compiled = _compiled_grid("memory", alloc, need, job)
    if compiled is None:
        return None
    kernel, (a, x, task, shape) = compiled
    args = memory_args(job, rules, prices) if task_args is None else task_args
    cost, killed = kernel(a, x, task, *args)
    return cost.reshape(shape), killed.reshape(shape)


def memory_args(job: JobContext, rules: SiteRules, prices: Prices) -> tuple:
    """The memory kernel's per-task arrays and numbers (all but the grid)."""
    n, per = len(job), cost_kernels.per_task
    hours = job.wall_s / 3600.0
    waits = prices.scout_delay_hour * room_delay_hours(rules, "himem", job.cores, hours,
                                                       job.n_jobs)  # fmt: skip
    himem_mb = rules.himem_mb_per_core
    return (
        per(job.cores, n), per(hours, n), per(waits, n),
        float(rules.standard_mb_per_core), float(himem_mb or 0.0),
        float(rules.standard_mb_per_core / rules.memory_compensation),
        float(rules.memory_kill_factor), float(prices.kill_overhead),
        float(prices.memory_gb_hour), float(prices.memory_overuse_gb_hour),
        float(prices.himem_core_hour * congestion(rules.himem_load)), himem_mb is not None,
    )  # fmt: skip


def cputime_compiled(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules, prices: Prices,
    task_args: tuple | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:  # fmt: skip
    """:func:`.costs.cputime_cost` and :func:`.costs.cputime_killed` (as 0/1) at once;
    None where the shapes are not the grid's (:func:`.cost_kernels.outer`). ``task_args``:
    :func:`cputime_args` of these job, rules and prices, where made already."""
    compiled = _compiled_grid("cputime", alloc, need, job)
    if compiled is None:
        return None
    kernel, (a, x, task, shape) = compiled
    args = cputime_args(job, rules, prices) if task_args is None else task_args
    cost, killed = kernel(a, x, task, *args)
    return cost.reshape(shape), killed.reshape(shape)


def cputime_args(job: JobContext, rules: SiteRules, prices: Prices) -> tuple:
    """The cpuTime kernel's per-task arrays and numbers (all but the grid)."""
    n, per = len(job), cost_kernels.per_task
    short = rules.short_maxtime_s
    pool = math.isfinite(rules.pool_cores)
    return (
        per(job.cores, n), per(_per_event(job), n),
        per(job.base_walltime_s, n), per(job.n_jobs, n),
        float(rules.max_maxtime_s), float(prices.kill_overhead),
        float(prices.walltime_slack_core_hour), float(short or 0.0),
        float(prices.long_queue_core_hour * congestion(rules.long_load)),
        float(prices.scout_delay_hour), float(rules.long_cores),
        float(queue_wait_h(rules.long_load, rules.long_residual_h)), float(rules.pool_cores),
        float(queue_wait_h(rules.pool_load, rules.pool_residual_h)) if pool else 0.0,
        short is not None, pool,
    )  # fmt: skip


def _per_event(job: JobContext) -> np.ndarray:
    """(n,) ``getJobMaxWalltime``'s seconds per HS06·s/event, as :func:`.costs.walltime_limit_s`
    divides it (the same operations, per task)."""
    return job.nevents / (
        np.maximum(job.cores, 1.0) * job.core_power * (job.cpu_efficiency / 100.0)
    )
