"""The cost grid's per-job costs compiled (numba): the price components of :mod:`.costs`
and whether each job is killed, in one loop (the code: :mod:`.jit_costs`).

A served task's cost policy prices ~100 candidate allocations against ~50 job needs per
priced target, and again each scout's measurement: the numpy functions make a score of
array passes over those grids, most of a request's CPU once the trees are compiled. The
kernels compute each element once, equal to the numpy definition bit for bit; the sums
over the needs (a matrix product) stay in numpy. What depends on a task only (its cores,
hours, the rooms' waits) is laid out per task by :mod:`.compiled_costs` in the named
tuples below, which the kernels read by name. The choice among the priced candidates
(:func:`.allocate.choose` and what the chunk reads at it) is one more kernel: a dozen
numpy calls per priced target otherwise, comparisons and gathers only.

Like :mod:`scoutless.models.tree_walk`, the kernels are compiled by :func:`load` (the
service, at start; numba's cache keeps them); without it the numpy functions serve. This
module imports no numba: the command line and the replay never pay for it.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from scoutless.compiled import Compiled


class MemoryGrid(NamedTuple):
    """The memory kernel's per-task arrays and the site's numbers (all but the grid)."""

    cores: np.ndarray
    hours: np.ndarray
    #: what a HIMEM slot's wait costs a task (core-hours equivalent)
    waits: np.ndarray
    standard: float
    himem_mb: float
    #: the HIMEM border: the most a standard slot takes
    border: float
    kill_factor: float
    kill_overhead: float
    gb_hour: float
    overuse_gb_hour: float
    #: the HIMEM premium at its congestion
    himem_price: float
    with_himem: bool


class CputimeGrid(NamedTuple):
    """The cpuTime kernel's per-task arrays and the site's numbers (all but the grid)."""

    cores: np.ndarray
    #: ``getJobMaxWalltime``'s seconds per HS06·s/event
    per_event: np.ndarray
    base: np.ndarray
    n_jobs: np.ndarray
    max_maxtime: float
    kill_overhead: float
    slack_core_hour: float
    short_maxtime: float
    #: the long queue's premium at its congestion
    long_price: float
    scout_delay_hour: float
    long_cores: float
    long_wait: float
    pool_cores: float
    pool_wait: float
    with_long: bool
    with_pool: bool


def loaded() -> bool:
    """Whether the compiled kernels are in use."""
    return _CODE.active is not None


def kernel(target: str, components: Sequence[str]) -> Callable[..., Any] | None:
    """``target``'s compiled grid where it is in use and sums these ``components`` in this
    order (:data:`.jit_costs.COMPONENTS`), else None: a component the machine code lacks
    leaves numpy pricing that target."""
    active = _CODE.active
    if active is None or active["components"].get(target) != tuple(components):
        return None
    return active["grids"][target]


def load() -> bool:
    """Compile (or read from numba's cache) the kernels; False (logged) without numba."""
    return _CODE.load()


def unload() -> None:
    """Back to the numpy functions (tests compare the two)."""
    _CODE.unload()


def _compile() -> dict[str, Any]:
    """The kernels, each compiled now (a tiny grid of each type): never on a request."""
    from scoutless.allocation import jit_costs

    one = np.ones((1, 1))
    rows = np.zeros(1, dtype=np.intp)
    for target, kind in (("memory", MemoryGrid), ("cputime", CputimeGrid)):
        jit_costs.GRIDS[target](one, one, rows, _example(kind), None)
    jit_costs.choice(one, one, one, one, 0.0, True)
    return {"grids": jit_costs.GRIDS, "choice": jit_costs.choice,
            "components": jit_costs.COMPONENTS}  # fmt: skip


def _example(kind: type[NamedTuple]) -> Any:
    """A ``kind`` of one task, each field of its declared type (what the callers pass)."""
    types = typing.get_type_hints(kind)
    made = {np.ndarray: lambda: np.ones(1), float: lambda: 1.0, bool: lambda: True}
    return kind(**{name: made[t]() for name, t in types.items()})


#: the kernels, compiled by :func:`load` (:class:`~scoutless.compiled.Compiled`)
_CODE: Compiled[dict[str, Any]] = Compiled("cost grid", _compile)


def choice(
    candidates: np.ndarray,
    expected: np.ndarray,
    p_kill: np.ndarray,
    task_needs: np.ndarray,
    cap: float | None,
) -> tuple[np.ndarray, ...] | None:
    """The compiled :func:`.jit_costs.choice` (best, value, cost, kill, covered per row), or None
    where the kernels are not loaded (numpy chooses)."""
    active = _CODE.active
    if active is None:
        return None
    arrays = (_writeable(a) for a in (candidates, expected, p_kill, task_needs))
    limit = 0.0 if cap is None else cap + 1e-12  # as allocate.choose compares
    return active["choice"](*arrays, limit, cap is not None)


def outer(alloc: np.ndarray, need: np.ndarray, n_tasks: int) -> tuple | None:
    """``alloc`` (tasks, ..., a, 1) against ``need`` (tasks, ..., 1, q), the cost grid's
    two shapes, as the kernels' rows: (rows, a) and (rows, q) C arrays, each row's task,
    and the result's shape; None for any other shape (the numpy functions serve)."""
    lead = alloc.shape[:-2]
    if (
        alloc.ndim != need.ndim or alloc.ndim < 3 or need.shape[:-2] != lead
        or alloc.shape[-1] != 1 or need.shape[-2] != 1 or lead[0] != n_tasks
    ):  # fmt: skip
        return None
    a = _writeable(alloc.reshape(-1, alloc.shape[-2]))
    x = _writeable(need.reshape(-1, need.shape[-1]))
    return a, x, _task_rows(n_tasks, len(a) // n_tasks), (*lead, a.shape[1], x.shape[1])


@functools.lru_cache(maxsize=256)
def _task_rows(n_tasks: int, per_task: int) -> np.ndarray:
    """Each grid row's task (the kernels read it, never write it: made once per shape)."""
    return np.repeat(np.arange(n_tasks, dtype=np.intp), per_task)


def _writeable(a: np.ndarray) -> np.ndarray:
    """``a`` as a float64 writeable C array (the kernels' signatures), copied only if not."""
    if a.dtype == np.float64 and a.flags.c_contiguous and a.flags.writeable:
        return a
    return np.array(a, dtype=np.float64, order="C")


def per_task(values: np.ndarray | float, n: int) -> np.ndarray:
    """(n,) float64 writeable C array of a per-task value (a scalar repeated)."""
    a = np.asarray(values, dtype=np.float64)
    return _writeable(a) if a.shape == (n,) else np.full(n, a, dtype=np.float64)
