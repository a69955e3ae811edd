"""The cost grid's per-job costs compiled (numba): :func:`memory_cost` and
:func:`cputime_cost` of :mod:`.costs`, and whether each job is killed, in one loop.

A served task's cost policy prices ~100 candidate allocations against ~50 job needs per
priced target, and again each scout's measurement: the numpy functions make a score of
array passes over those grids, most of a request's CPU once the trees are compiled. Here
each element is computed once, with the very operations of :mod:`.costs` in the same
order (no fast-math: LLVM neither reorders nor fuses them), so every cost is equal to
the numpy one bit for bit; the sums over the needs (a matrix product) stay in numpy.
What depends on a task only (its cores, hours, the rooms' waits) is computed by the numpy
code of :mod:`.costs` first and passed per task.

Like :mod:`scoutless.models.tree_walk`, the kernels are compiled by :func:`load` (the
service, at start; ``cache=True``); without it the numpy functions serve.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from scoutless.allocation.costs import JobContext, SiteRules
    from scoutless.config import Prices

log = logging.getLogger(__name__)

#: the kernels in use once :func:`load` has run (None: the numpy functions)
_KERNELS: dict[str, Callable[..., Any]] | None = None
#: the kernels once compiled in this process (:func:`unload` keeps them)
_BUILT: dict[str, Callable[..., Any]] | None = None


def loaded() -> bool:
    """Whether the compiled kernels are in use."""
    return _KERNELS is not None


def load() -> bool:
    """Compile (or read from numba's cache) the kernels; False (logged) without numba."""
    global _KERNELS, _BUILT
    if _BUILT is None:
        try:
            _BUILT = _compile()
        except ImportError as exc:
            log.warning("cost grid in numpy: numba unavailable (%s)", exc)
    _KERNELS = _BUILT
    return _KERNELS is not None


def unload() -> None:
    """Back to the numpy functions (tests compare the two)."""
    global _KERNELS
    _KERNELS = None


def _compile() -> dict[str, Callable[..., Any]]:
    import numba

    grid = "float64[:, ::1]"
    task = "float64[::1]"
    jit = numba.njit(cache=True, nogil=True, boundscheck=False)
    # the kernels call these by their global names: compiled first (numba resolves a
    # global when it compiles the caller; called from Python they answer the same)
    globals().update(_maximum=jit(_maximum), _minimum=jit(_minimum))
    floats = ", ".join(["float64"] * 8)
    memory_sig = (
        f"Tuple(({grid}, {grid}))({grid}, {grid}, {task}, {task}, {task}, {floats}, boolean)"
    )
    floats = ", ".join(["float64"] * 10)
    cputime_sig = (
        f"Tuple(({grid}, {grid}))({grid}, {grid}, {task}, {task}, {task}, {task}, {floats}, "
        "boolean, boolean)"
    )
    return {
        "memory": numba.njit(memory_sig, cache=True, nogil=True, boundscheck=False)(_memory),
        "cputime": numba.njit(cputime_sig, cache=True, nogil=True, boundscheck=False)(_cputime),
    }


def _maximum(a: float, b: float) -> float:
    """``np.maximum`` of two numbers: NaN if either is."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return a if a >= b else b


def _minimum(a: float, b: float) -> float:
    """``np.minimum`` of two numbers: NaN if either is."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return a if a <= b else b


def _memory(
    alloc: Any, need: Any, cores: Any, hours: Any, waits: Any, standard: float,
    himem_mb: float, border: float, kill_factor: float, kill_overhead: float,
    gb_hour: float, overuse_gb_hour: float, himem_price: float, with_himem: bool,
) -> tuple[Any, Any]:  # fmt: skip
    """(cost, killed as 0/1) per element of ``alloc`` and ``need`` (tasks, elements), as
    :func:`.costs.memory_cost` and :func:`.costs.memory_killed` compute them."""
    n, m = alloc.shape
    cost = np.empty((n, m))
    killed_out = np.empty((n, m))
    for i in range(n):
        c, h, w = cores[i], hours[i], waits[i]
        for j in range(m):
            a, x = alloc[i, j], need[i, j]
            if with_himem:
                held = _maximum(a, himem_mb if a > border else standard)
                slot_need = _maximum(x, himem_mb if x > border else standard)
            else:
                held = _maximum(a, standard)
                slot_need = _maximum(x, standard)
            limit = kill_factor * held
            killed = x > limit
            ran = _minimum(1.0, limit / _maximum(x, 1e-9)) if killed else 1.0
            kill = (ran + kill_overhead) * c * h if killed else 0.0
            slack_gb = _maximum(held - slot_need, 0.0) / 1024.0
            slack = 0.0 if killed else gb_hour * slack_gb * c * h
            over_gb = 0.0 if killed else _maximum(x - held, 0.0) / 1024.0
            overuse = overuse_gb_hour * over_gb * c * h
            himem = himem_price * c * h + w if _maximum(x, a) > border else 0.0
            cost[i, j] = kill + slack + overuse + himem
            killed_out[i, j] = 1.0 if killed else 0.0
    return cost, killed_out


def _cputime(
    alloc: Any, need: Any, cores: Any, per_event: Any, base: Any, n_jobs: Any,
    max_maxtime: float, kill_overhead: float, slack_core_hour: float, short_maxtime: float,
    long_price: float, scout_delay_hour: float, long_cores: float, long_wait: float,
    pool_cores: float, pool_wait: float, with_long: bool, with_pool: bool,
) -> tuple[Any, Any]:  # fmt: skip
    """(cost, killed as 0/1) per element, as :func:`.costs.cputime_cost` and
    :func:`.costs.cputime_killed` compute them (the long room's wait per element:
    :func:`.costs.room_delay_hours`)."""
    n, m = alloc.shape
    cost = np.empty((n, m))
    killed_out = np.empty((n, m))
    capped = math.isfinite(long_cores)
    for i in range(n):
        c, pe, b = cores[i], per_event[i], base[i]
        jobs = _maximum(n_jobs[i], 1.0)
        for j in range(m):
            limit = _minimum(alloc[i, j] * pe + b, max_maxtime)
            runs = need[i, j] * pe + b
            killed = runs > limit
            kill = c * (limit + kill_overhead * runs) / 3600.0 if killed else 0.0
            held = max_maxtime if killed else limit
            slack_h = _maximum(held - runs, 0.0) / 3600.0
            slack = slack_core_hour * c * slack_h
            long = 0.0
            if with_long:
                waits = 0.0
                if capped:
                    work_h = c * (runs / 3600.0)
                    in_room = work_h / long_cores + long_wait / jobs
                    in_pool = work_h / pool_cores + pool_wait / jobs if with_pool else 0.0
                    waits = _maximum(in_room - in_pool, 0.0)
                if held > short_maxtime:
                    long = long_price * c * runs / 3600.0 + scout_delay_hour * waits
            cost[i, j] = kill + slack + long
            killed_out[i, j] = 1.0 if killed else 0.0
    return cost, killed_out


def _grid(alloc: np.ndarray, need: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Both operands broadcast to one shape, as (tasks, elements) writeable C arrays (the
    kernels' signatures)."""
    shape = np.broadcast_shapes(alloc.shape, need.shape)
    flat = (shape[0], -1)
    a = np.require(np.broadcast_to(alloc, shape), float, ["C", "W"]).reshape(flat)
    x = np.require(np.broadcast_to(need, shape), float, ["C", "W"]).reshape(flat)
    return a, x, shape


def memory_cost_killed(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules, prices: Prices
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`.costs.memory_cost` and :func:`.costs.memory_killed` (as 0/1) at once."""
    from scoutless.allocation.costs import congestion, room_delay_hours

    assert _KERNELS is not None
    a, x, shape = _grid(alloc, need)
    hours = job.wall_s / 3600.0
    waits = prices.scout_delay_hour * room_delay_hours(rules, "himem", job.cores, hours,
                                                       job.n_jobs)  # fmt: skip
    himem_mb = rules.himem_mb_per_core
    cost, killed = _KERNELS["memory"](
        a, x, _task(job.cores, shape), _task(hours, shape), _task(waits, shape),
        float(rules.standard_mb_per_core), float(himem_mb or 0.0),
        float(rules.standard_mb_per_core / rules.memory_compensation),
        float(rules.memory_kill_factor), float(prices.kill_overhead),
        float(prices.memory_gb_hour), float(prices.memory_overuse_gb_hour),
        float(prices.himem_core_hour * congestion(rules.himem_load)), himem_mb is not None,
    )  # fmt: skip
    return cost.reshape(shape), killed.reshape(shape)


def cputime_cost_killed(
    alloc: np.ndarray, need: np.ndarray, job: JobContext, rules: SiteRules, prices: Prices
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`.costs.cputime_cost` and :func:`.costs.cputime_killed` (as 0/1) at once."""
    from scoutless.allocation.costs import _queue_wait_h, congestion

    assert _KERNELS is not None
    a, x, shape = _grid(alloc, need)
    short = rules.short_maxtime_s
    pool = math.isfinite(rules.pool_cores)
    cost, killed = _KERNELS["cputime"](
        a, x, _task(job.cores, shape), _task(_per_event(job), shape),
        _task(job.base_walltime_s, shape), _task(job.n_jobs, shape),
        float(rules.max_maxtime_s), float(prices.kill_overhead),
        float(prices.walltime_slack_core_hour), float(short or 0.0),
        float(prices.long_queue_core_hour * congestion(rules.long_load)),
        float(prices.scout_delay_hour), float(rules.long_cores),
        float(_queue_wait_h(rules.long_load, rules.long_residual_h)), float(rules.pool_cores),
        float(_queue_wait_h(rules.pool_load, rules.pool_residual_h)) if pool else 0.0,
        short is not None, pool,
    )  # fmt: skip
    return cost.reshape(shape), killed.reshape(shape)


def _per_event(job: JobContext) -> np.ndarray:
    """(n,) ``getJobMaxWalltime``'s seconds per HS06·s/event, as
    :func:`.costs.walltime_limit_s` divides it (the same operations, per task)."""
    return job.nevents / (
        np.maximum(job.cores, 1.0) * job.core_power * (job.cpu_efficiency / 100.0)
    )


def _task(values: np.ndarray | float, shape: tuple) -> np.ndarray:
    """(tasks,) float64 C array of a per-task value (a scalar broadcast)."""
    return np.require(np.broadcast_to(np.asarray(values, dtype=float), (shape[0],)), float,
                      ["C", "W"])  # fmt: skip
