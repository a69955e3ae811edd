"""The least-expected-cost recursion of `distribution.plan` as machine code (numba): an
O(m²) loop over the allocation grid that numpy would run as m small vector operations.
The operations are numpy's, in the same order (no fast-math: LLVM neither reorders nor
fuses them), and ties go to the first candidate as ``np.argmin``'s do, so the plan equals
the numpy recursion's bit for bit (tests/sizing/test_distribution.py checks it)."""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

jit = numba.njit(cache=True, nogil=True, boundscheck=False)


@jit
def best_allocation(
    c: Any, tail: Any, ecum: Any, holds: float, failure_cost: float, cap: float,
    grace: float = 1.0, overuse: float = 0.0,
) -> int:  # fmt: skip
    """The index q (1..m) of ``c[q - 1]``, the first attempt of the plan of least
    expected cost: J(k) = min over q > k of c_q·(P(need > c_k) − (1 − holds)·P(need >
    c_q)) − E[need; c_k < need ≤ c_q] + failure_cost·P(need > c_q) + J(q). ``cap``: the
    first attempt's P(need > c_q) at most this share of P(need > c_0) (NaN: no cap).

    ``grace`` > 1: a site that kills only above ``grace`` × the allocation (PanDA's
    pilot): an attempt at c_q that the need exceeds by no more than that runs on, each
    unit above c_q at ``overuse`` × a unit of slack's price; one above fails, and what is
    known after is need > grace·c_q, taken as need > c_p, the largest candidate at or
    below it (p(q) ≥ q; a little less than is known: the plan errs towards caution).
    J(k) = min over q > k of c_q·P(c_k < need ≤ c_q) − E[need; c_k < need ≤ c_q]
    + overuse·(E[need; c_q < need ≤ c_p] − c_q·P(c_q < need ≤ c_p))
    + (failure_cost + holds·c_q)·P(need > c_p) + J(p); ``cap`` bounds P(need > c_p)."""
    m = len(c)
    plain = not grace > 1.0
    reach = np.arange(m + 1)  # p(q): the candidates at or below grace·c_q
    if not plain:
        p = 1
        for q in range(1, m + 1):
            p = max(p, q)
            while p < m and c[p] <= grace * c[q - 1]:
                p += 1
            reach[q] = p
    cost = np.zeros(m + 1)
    best = 0
    for k in range(m - 1, -1, -1):
        chosen, least = -1, math.inf
        for q in range(k + 1, m + 1):
            a, r = c[q - 1], reach[q]
            if plain:
                total = a * (tail[k] - (1.0 - holds) * tail[q]) - (ecum[q] - ecum[k]) \
                    + failure_cost * tail[q] + cost[q]  # fmt: skip
            else:
                fits = a * (tail[k] - tail[q]) - (ecum[q] - ecum[k])
                runs_on = overuse * ((ecum[r] - ecum[q]) - a * (tail[q] - tail[r]))
                total = fits + runs_on + (failure_cost + holds * a) * tail[r] + cost[r]
            if k == 0 and not math.isnan(cap) and not tail[r] <= cap * tail[0] + 1e-12:
                total = math.inf
            if math.isnan(total):  # np.argmin: the first NaN
                chosen, least = q, total
                break
            if chosen < 0 or total < least:
                chosen, least = q, total
        cost[k], best = least, chosen
    return best


@jit
def plan_ranked(
    ranked: Any, weights: Any, above: float, levels: Any, holds: float, failure_cost: float,
    cap: float, grace: float = 1.0, overuse: float = 0.0,
) -> float:  # fmt: skip
    """`distribution.plan` on a sample already in ascending order (``weights`` in that
    order) in one pass: the values above ``above``, their quantiles at ``levels`` (the
    inverse of the weighted empirical distribution, no interpolation, ties merged, the
    largest value last), the mass and partial expectation cut at them, `best_allocation`.
    NaN: no value lies above ``above`` (the plan's None). Sums run in the sample's order,
    so a sample gives the same plan every time (in every process)."""
    n = len(ranked)
    while n > 0 and math.isnan(ranked[n - 1]):  # a sort puts NaN last: never above
        n -= 1
    start = 0
    while start < n and not ranked[start] > above:
        start += 1
    total = 0.0
    for i in range(start, n):
        total += weights[i]
    if start == n or not total > 0:
        return math.nan
    # the quantiles: each level's first value whose cumulative probability reaches it
    c = np.empty(len(levels))
    m, i, cum = 0, start, weights[start] / total
    for level in levels:
        bound = level - 1e-12
        while cum < bound and i < n - 1:
            i += 1
            cum += weights[i] / total
        if m == 0 or ranked[i] != c[m - 1]:
            c[m] = ranked[i]
            m += 1
    c = c[:m]
    c[m - 1] = ranked[n - 1]
    # each value's bin: the first candidate at or above it
    mass = np.zeros(m)
    part = np.zeros(m)
    b = 0
    for i in range(start, n):
        while c[b] < ranked[i]:
            b += 1
        mass[b] += weights[i]
        part[b] += weights[i] * ranked[i]
    tail = np.empty(m + 1)
    ecum = np.empty(m + 1)
    whole = mass.sum()
    tail[0], ecum[0] = whole, 0.0
    run_mass, run_part = 0.0, 0.0
    for k in range(m):
        run_mass += mass[k]
        run_part += part[k]
        tail[k + 1] = whole - run_mass
        ecum[k + 1] = run_part
    return c[best_allocation(c, tail, ecum, holds, failure_cost, cap, grace, overuse) - 1]
