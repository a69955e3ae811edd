"""The cost grid's machine code (numba), imported only by :func:`.cost_kernels.load`.

Each target's cost is the sum of its price components (:mod:`.costs` defines them in numpy:
the definition and the oracle). Each target's grid here computes, for every allocation
against every need, whether the job is killed and each component, with the very
operations of :mod:`.costs` in the same order (no fast-math: LLVM neither reorders nor
fuses them), so every component and their sum equal numpy's bit for bit; given a
component's index (``only``) a grid gives that component alone, which the tests compare
with numpy's component by component (tests/allocation/test_cost_kernels.py).
:data:`COMPONENTS` names them; a target whose names differ from those :mod:`.costs` sums is
priced in numpy (:func:`.cost_kernels.kernel`), so a component added there is never
silently left out here. Each grid is one tight loop, the hot path of a served decision:
a call per element or a run-time choice of the component in it costs twice the time.

Everything a grid calls is in this module, so numba's cache (keyed on this file) never
serves code older than the formulas.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

jit = numba.njit(cache=True, nogil=True, boundscheck=False)

#: target -> the components its grid sums, in that order (``only`` indexes them)
COMPONENTS: dict[str, tuple[str, ...]] = {
    "memory": ("kills", "memory_slack", "memory_overuse", "himem"),
    "cputime": ("kills", "walltime_slack", "long_queue"),
}


@jit
def _maximum(a: float, b: float) -> float:
    """``np.maximum`` of two numbers: NaN if either is."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return a if a >= b else b


@jit
def _minimum(a: float, b: float) -> float:
    """``np.minimum`` of two numbers: NaN if either is."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    return a if a <= b else b


@jit
def memory_grid(alloc: Any, need: Any, task: Any, g: Any, only: Any) -> tuple[Any, Any]:
    """(cost, killed as 0/1) of every ramCount ``alloc[r, p]`` against every need
    ``need[r, q]`` (row ``r`` of task ``task[r]``; ``g``: a :class:`.cost_kernels.MemoryGrid`),
    as :func:`.costs.memory_components` sums them and :func:`.costs.memory_killed` finds.
    ``only``: None, or the index in :data:`COMPONENTS` of the one component to give."""
    cores, hours, waits = g.cores, g.hours, g.waits
    standard, himem_mb, border, with_himem = g.standard, g.himem_mb, g.border, g.with_himem
    kill_factor, kill_overhead, himem_price = g.kill_factor, g.kill_overhead, g.himem_price
    gb_hour, overuse_gb_hour = g.gb_hour, g.overuse_gb_hour
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
                # a None ``only`` is pruned when numba compiles: the served loop is the sum
                cost[r, p, q] = (kill + slack + overuse + himem if only is None
                                 else (kill, slack, overuse, himem)[only])  # fmt: skip
                killed_out[r, p, q] = 1.0 if killed else 0.0
    return cost, killed_out


@jit
def cputime_grid(alloc: Any, need: Any, task: Any, g: Any, only: Any) -> tuple[Any, Any]:
    """(cost, killed as 0/1) as :func:`memory_grid` lays them out, of cpuTime allocations
    (``g``: a :class:`.cost_kernels.CputimeGrid`), as :func:`.costs.cputime_components`
    sums them and :func:`.costs.cputime_killed` finds (the long room's wait per element:
    :func:`.site.room_delay_hours`)."""
    cores, per_event, base, n_jobs = g.cores, g.per_event, g.base, g.n_jobs
    max_maxtime, kill_overhead, slack_core_hour = g.max_maxtime, g.kill_overhead, g.slack_core_hour
    short_maxtime, long_price, scout_delay_hour = g.short_maxtime, g.long_price, g.scout_delay_hour
    long_cores, long_wait, pool_cores, pool_wait = g.long_cores, g.long_wait, g.pool_cores, g.pool_wait
    with_long, with_pool = g.with_long, g.with_pool
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
                cost[r, p, q] = kill + slack + long if only is None else (kill, slack, long)[only]
                killed_out[r, p, q] = 1.0 if killed else 0.0
    return cost, killed_out


#: target -> its grid
GRIDS = {"memory": memory_grid, "cputime": cputime_grid}


@jit
def _least(xs: Any) -> float:
    """``xs.min()``: NaN if any element is."""
    least = math.inf
    for x in xs:
        if math.isnan(x) or math.isnan(least):
            least = math.nan
        elif x < least:
            least = x
    return least


@jit
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


@jit
def choice(
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
