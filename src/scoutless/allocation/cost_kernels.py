"""The cost grid's per-job costs compiled (numba): :func:`memory_cost` and
:func:`cputime_cost` of :mod:`.costs`, and whether each job is killed, in one loop.

A served task's cost policy prices ~100 candidate allocations against ~50 job needs per
priced target, and again each scout's measurement: the numpy functions make a score of
array passes over those grids, most of a request's CPU once the trees are compiled. Here
each element is computed once, with the very operations of :mod:`.costs` in the same
order (no fast-math: LLVM neither reorders nor fuses them), so every cost is equal to
the numpy one bit for bit; the sums over the needs (a matrix product) stay in numpy.
What depends on a task only (its cores, hours, the rooms' waits) is computed by the numpy
code of :mod:`.compiled_costs` first and passed per task (:mod:`.compiled_costs` calls
the kernels; this module imports nothing of it). The choice among the priced candidates
(:func:`.allocate.choose` and what the chunk reads at it) is one more loop, :func:`_choice`:
a dozen numpy calls per priced target otherwise, comparisons and gathers only.

Like :mod:`scoutless.models.tree_walk`, the kernels are compiled by :func:`load` (the
service, at start; ``cache=True``); without it the numpy functions serve.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from scoutless.compiled import Compiled


def loaded() -> bool:
    """Whether the compiled kernels are in use."""
    return _CODE.active is not None


def kernel(name: str) -> Callable[..., Any] | None:
    """The compiled ``"memory"`` or ``"cputime"`` kernel in use, else None."""
    active = _CODE.active
    return None if active is None else active[name]


def load() -> bool:
    """Compile (or read from numba's cache) the kernels; False (logged) without numba."""
    return _CODE.load()


def unload() -> None:
    """Back to the numpy functions (tests compare the two)."""
    _CODE.unload()


def _compile() -> dict[str, Callable[..., Any]]:
    import numba

    grid, out = "float64[:, ::1]", "float64[:, :, ::1]"
    rows, task = "intp[::1]", "float64[::1]"
    jit = numba.njit(cache=True, nogil=True, boundscheck=False)
    # the kernels call these by their global names: compiled first (numba resolves a
    # global when it compiles the caller; called from Python they answer the same)
    globals().update(
        _maximum=jit(_maximum),
        _minimum=jit(_minimum),
        _least=jit(_least),
        _stable_order=jit(_stable_order),
    )
    floats = ", ".join(["float64"] * 8)
    memory_sig = (
        f"Tuple(({out}, {out}))({grid}, {grid}, {rows}, {task}, {task}, {task}, {floats}, boolean)"
    )
    floats = ", ".join(["float64"] * 10)
    cputime_sig = (
        f"Tuple(({out}, {out}))({grid}, {grid}, {rows}, {task}, {task}, {task}, {task}, "
        f"{floats}, boolean, boolean)"
    )
    vector = "float64[::1]"
    choice_sig = (
        f"Tuple((intp[::1], {vector}, {vector}, {vector}, {vector}))"
        f"({grid}, {grid}, {grid}, {grid}, float64, boolean)"
    )
    return {
        "memory": numba.njit(memory_sig, cache=True, nogil=True, boundscheck=False)(_memory),
        "cputime": numba.njit(cputime_sig, cache=True, nogil=True, boundscheck=False)(_cputime),
        "choice": numba.njit(choice_sig, cache=True, nogil=True, boundscheck=False)(_choice),
    }


#: the kernels by name, compiled by :func:`load` (:class:`~scoutless.compiled.Compiled`)
_CODE: Compiled[dict[str, Callable[..., Any]]] = Compiled("cost grid", _compile)


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
    alloc: Any, need: Any, task: Any, cores: Any, hours: Any, waits: Any, standard: float,
    himem_mb: float, border: float, kill_factor: float, kill_overhead: float,
    gb_hour: float, overuse_gb_hour: float, himem_price: float, with_himem: bool,
) -> tuple[Any, Any]:  # fmt: skip
    """(cost, killed as 0/1) of every allocation ``alloc[r, p]`` against every need
    ``need[r, q]`` (row ``r`` of task ``task[r]``), as :func:`.costs.memory_cost` and
    :func:`.costs.memory_killed` compute them."""
    rows, n_alloc, n_need = alloc.shape[0], alloc.shape[1], need.shape[1]
    cost = np.empty((rows, n_alloc, n_need))
    killed_out = np.empty((rows, n_alloc, n_need))
    for r in range(rows):
        i = task[r]
        c, h, w = cores[i], hours[i], waits[i]
        for p in range(n_alloc):
            a = alloc[r, p]
            held = _maximum(a, himem_mb if with_himem and a > border else standard)
            limit = kill_factor * held
            for q in range(n_need):
                x = need[r, q]
                slot_need = _maximum(x, himem_mb if with_himem and x > border else standard)
                killed = x > limit
                ran = _minimum(1.0, limit / _maximum(x, 1e-9)) if killed else 1.0
                kill = (ran + kill_overhead) * c * h if killed else 0.0
                slack_gb = _maximum(held - slot_need, 0.0) / 1024.0
                slack = 0.0 if killed else gb_hour * slack_gb * c * h
                over_gb = 0.0 if killed else _maximum(x - held, 0.0) / 1024.0
                overuse = overuse_gb_hour * over_gb * c * h
                himem = himem_price * c * h + w if _maximum(x, a) > border else 0.0
                cost[r, p, q] = kill + slack + overuse + himem
                killed_out[r, p, q] = 1.0 if killed else 0.0
    return cost, killed_out


def _cputime(
    alloc: Any, need: Any, task: Any, cores: Any, per_event: Any, base: Any, n_jobs: Any,
    max_maxtime: float, kill_overhead: float, slack_core_hour: float, short_maxtime: float,
    long_price: float, scout_delay_hour: float, long_cores: float, long_wait: float,
    pool_cores: float, pool_wait: float, with_long: bool, with_pool: bool,
) -> tuple[Any, Any]:  # fmt: skip
    """(cost, killed as 0/1) as :func:`_memory` lays them out, as
    :func:`.costs.cputime_cost` and :func:`.costs.cputime_killed` compute them (the long
    room's wait per element: :func:`.site.room_delay_hours`)."""
    rows, n_alloc, n_need = alloc.shape[0], alloc.shape[1], need.shape[1]
    cost = np.empty((rows, n_alloc, n_need))
    killed_out = np.empty((rows, n_alloc, n_need))
    capped = math.isfinite(long_cores)
    for r in range(rows):
        i = task[r]
        c, pe, b = cores[i], per_event[i], base[i]
        jobs = _maximum(n_jobs[i], 1.0)
        for p in range(n_alloc):
            limit = _minimum(alloc[r, p] * pe + b, max_maxtime)
            for q in range(n_need):
                runs = need[r, q] * pe + b
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
                cost[r, p, q] = kill + slack + long
                killed_out[r, p, q] = 1.0 if killed else 0.0
    return cost, killed_out


def _least(xs: Any) -> float:
    """``xs.min()``: NaN if any element is."""
    least = math.inf
    for x in xs:
        if math.isnan(x) or math.isnan(least):
            least = math.nan
        elif x < least:
            least = x
    return least


def _stable_order(xs: Any, order: Any) -> None:
    """``order[:] = np.argsort(xs, kind="stable")`` (NaN last), by insertion: a handful of
    candidates, no allocation."""
    for j in range(xs.shape[0]):
        x = xs[j]
        at = j
        while at > 0:
            y = xs[order[at - 1]]
            if x < y or (math.isnan(y) and not math.isnan(x)):
                order[at] = order[at - 1]
                at -= 1
            else:
                break
        order[at] = j


def _choice(
    candidates: Any, expected: Any, p_kill: Any, task_needs: Any, limit: float, capped: bool
) -> tuple[Any, Any, Any, Any, Any]:
    """Per row, :func:`.allocate.choose`'s index (the cheapest candidate whose kill
    probability is at most ``limit`` where ``capped``, else among those least likely to
    kill; ties: the largest, then the last), and what the chunk reads at it: the value,
    its expected cost and kill probability, and the share of ``task_needs`` at or below it.

    numpy's steps, element by element: the candidates in a stable ascending order with NaN
    last (an insertion sort), read from the end; the least cost NaN if any is (as
    ``ndarray.min``); the tie bound ``least * (1 + 1e-9) + 1e-12`` in the same two
    roundings; the first tied index as ``argmax`` finds it (0 where none)."""
    rows, k, m = candidates.shape[0], candidates.shape[1], task_needs.shape[1]
    best = np.empty(rows, dtype=np.intp)
    value, cost_at, kill_at, covered = (
        np.empty(rows),
        np.empty(rows),
        np.empty(rows),
        np.empty(rows),
    )
    order = np.empty(k, dtype=np.intp)
    allowed = np.empty(k, dtype=np.bool_)
    cost = np.empty(k)
    for r in range(rows):
        some = False
        for j in range(k):
            allowed[j] = (p_kill[r, j] <= limit) if capped else True
            some = some or allowed[j]
        if not some:
            least = _least(p_kill[r])
            for j in range(k):
                allowed[j] = p_kill[r, j] <= least
        for j in range(k):
            cost[j] = expected[r, j] if allowed[j] else math.inf
        _stable_order(candidates[r], order)
        least = _least(cost)
        bound = least * (1 + 1e-9) + 1e-12
        chosen = order[k - 1]
        for j in range(k - 1, -1, -1):  # largest first, as the reversed order
            if cost[order[j]] <= bound:
                chosen = order[j]
                break
        best[r] = chosen
        v = candidates[r, chosen]
        value[r], cost_at[r], kill_at[r] = v, expected[r, chosen], p_kill[r, chosen]
        count = 0
        for q in range(m):
            if task_needs[r, q] <= v:
                count += 1
        covered[r] = count / m
    return best, value, cost_at, kill_at, covered


def choice(
    candidates: np.ndarray,
    expected: np.ndarray,
    p_kill: np.ndarray,
    task_needs: np.ndarray,
    cap: float | None,
) -> tuple[np.ndarray, ...] | None:
    """The compiled :func:`_choice` (best, value, cost, kill, covered per row), or None
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
