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
    c: Any, tail: Any, ecum: Any, holds: float, failure_cost: float, cap: float
) -> int:
    """The index q (1..m) of ``c[q - 1]``, the first attempt of the plan of least
    expected cost: J(k) = min over q > k of c_q·(P(need > c_k) − (1 − holds)·P(need >
    c_q)) − E[need; c_k < need ≤ c_q] + failure_cost·P(need > c_q) + J(q). ``cap``: the
    first attempt's P(need > c_q) at most this share of P(need > c_0) (NaN: no cap)."""
    m = len(c)
    cost = np.zeros(m + 1)
    best = 0
    for k in range(m - 1, -1, -1):
        chosen, least = -1, math.inf
        for q in range(k + 1, m + 1):
            held = c[q - 1] * (tail[k] - (1.0 - holds) * tail[q])
            total = held - (ecum[q] - ecum[k]) + failure_cost * tail[q] + cost[q]
            if k == 0 and not math.isnan(cap) and not tail[q] <= cap * tail[0] + 1e-12:
                total = math.inf
            if math.isnan(total):  # np.argmin: the first NaN
                chosen, least = q, total
                break
            if chosen < 0 or total < least:
                chosen, least = q, total
        cost[k], best = least, chosen
    return best
