"""The cost grids priced by the compiled kernels (:mod:`.cost_kernels`): each target's
per-task arguments laid out once (named, as the kernels read them), the grid handed over,
the cost and the kill (as 0/1) in one pass, equal bit for bit to :mod:`.costs`' numpy
functions; None wherever no kernel is loaded or a shape is not the grid's, and numpy
prices it. The one caller of the kernels: :class:`.costs.CostModel`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from scoutless.allocation import cost_kernels
from scoutless.allocation.context import JobContext
from scoutless.allocation.cost_kernels import CputimeGrid, MemoryGrid
from scoutless.allocation.site import SiteRules, congestion, queue_wait_h, room_delay_hours
from scoutless.config import Prices


def compiled_grid(
    target: str, components: Sequence[str], alloc: np.ndarray, need: np.ndarray,
    job: JobContext, rules: SiteRules, prices: Prices, task_args: Any = None,
    only: int | None = None,
) -> tuple[np.ndarray, np.ndarray] | None:  # fmt: skip
    """``target``'s cost (the sum of ``components``) and kill (as 0/1) at once, as
    :mod:`.costs` computes them; None where the kernel is not loaded, does not price these
    components, or the shapes are not the grid's (:func:`.cost_kernels.outer`): numpy
    prices it. ``task_args``: :func:`grid_args` of these job, rules and prices, where made
    already; ``only``: the index of one component to give instead of the sum (the tests
    compare each with numpy's)."""
    kernel = cost_kernels.kernel(target, components)
    laid = None if kernel is None else cost_kernels.outer(alloc, need, len(job))
    if laid is None:
        return None
    a, x, task, shape = laid
    args = grid_args(target, job, rules, prices) if task_args is None else task_args
    cost, killed = kernel(a, x, task, args, only)
    return cost.reshape(shape), killed.reshape(shape)


def grid_args(target: str, job: JobContext, rules: SiteRules, prices: Prices) -> Any:
    """``target``'s per-task arrays and the site's numbers, as its kernel reads them."""
    return _ARGS[target](job, rules, prices)


def memory_args(job: JobContext, rules: SiteRules, prices: Prices) -> MemoryGrid:
    """The memory kernel's per-task arrays and numbers (all but the grid)."""
    n, per = len(job), cost_kernels.per_task
    hours = job.wall_s / 3600.0
    waits = prices.scout_delay_hour * room_delay_hours(rules, "himem", job.cores, hours,
                                                       job.n_jobs)  # fmt: skip
    himem_mb = rules.himem_mb_per_core
    return MemoryGrid(
        cores=per(job.cores, n), hours=per(hours, n), waits=per(waits, n),
        standard=float(rules.standard_mb_per_core), himem_mb=float(himem_mb or 0.0),
        border=float(rules.standard_mb_per_core / rules.memory_compensation),
        kill_factor=float(rules.memory_kill_factor), kill_overhead=float(prices.kill_overhead),
        gb_hour=float(prices.memory_gb_hour),
        overuse_gb_hour=float(prices.memory_overuse_gb_hour),
        himem_price=float(prices.himem_core_hour * congestion(rules.himem_load)),
        with_himem=himem_mb is not None,
    )  # fmt: skip


def cputime_args(job: JobContext, rules: SiteRules, prices: Prices) -> CputimeGrid:
    """The cpuTime kernel's per-task arrays and numbers (all but the grid)."""
    n, per = len(job), cost_kernels.per_task
    short = rules.short_maxtime_s
    pool = math.isfinite(rules.pool_cores)
    return CputimeGrid(
        cores=per(job.cores, n), per_event=per(_per_event(job), n),
        base=per(job.base_walltime_s, n), n_jobs=per(job.n_jobs, n),
        max_maxtime=float(rules.max_maxtime_s), kill_overhead=float(prices.kill_overhead),
        slack_core_hour=float(prices.walltime_slack_core_hour),
        short_maxtime=float(short or 0.0),
        long_price=float(prices.long_queue_core_hour * congestion(rules.long_load)),
        scout_delay_hour=float(prices.scout_delay_hour), long_cores=float(rules.long_cores),
        long_wait=float(queue_wait_h(rules.long_load, rules.long_residual_h)),
        pool_cores=float(rules.pool_cores),
        pool_wait=float(queue_wait_h(rules.pool_load, rules.pool_residual_h)) if pool else 0.0,
        with_long=short is not None, with_pool=pool,
    )  # fmt: skip


def _per_event(job: JobContext) -> np.ndarray:
    """(n,) ``getJobMaxWalltime``'s seconds per HS06·s/event, as :func:`.costs.walltime_limit_s`
    divides it (the same operations, per task)."""
    return job.nevents / (
        np.maximum(job.cores, 1.0) * job.core_power * (job.cpu_efficiency / 100.0)
    )


#: target -> what its kernel reads per task
_ARGS: dict[str, Callable[[JobContext, SiteRules, Prices], Any]] = {
    "memory": memory_args, "cputime": cputime_args,
}  # fmt: skip
