"""COBYLA without the constraint work gives SciPy's own answer to the bit: the same
evaluations in the same order, on problems like the low-wastage regression's and others."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import scipy.optimize as spo

from scoutless.sizing import lwr
from scoutless.sizing.unconstrained_cobyla import _prima, free_of_constraints

Objective = Callable[[np.ndarray], float]


def _run(
    f: Objective, x0: np.ndarray, **options: object
) -> tuple[list[tuple[float, bytes]], object]:
    seen: list[tuple[float, bytes]] = []

    def logged(p: np.ndarray) -> float:
        value = f(p)
        seen.append((value, p.tobytes()))
        return value

    result = spo.minimize(logged, x0, method="COBYLA", options={"maxiter": 200}, **options)
    return seen, (result.x.tobytes(), result.fun, result.nfev)


def _problems() -> list[tuple[Objective, np.ndarray]]:
    rng = np.random.default_rng(7)
    out: list[tuple[Objective, np.ndarray]] = []
    for i in range(12):
        x, t = rng.uniform(0, 1, 30), rng.uniform(1, 50, 30)
        y = rng.uniform(0, 1, 30) * (0.2 + i % 3)
        y = (y - y.min()) / np.ptp(y)

        def wastage(p: np.ndarray, x=x, y=y, t=t) -> float:
            return sum(lwr.exponential_waste(np.clip(x * p[0] + p[1], 0.01, None), y, t)[:2])

        out.append((wastage, rng.normal(size=2) * (0.01, 1.0, 100.0)[i % 3]))
    a = rng.normal(size=2)
    out.append((lambda p: float((p[0] - a[0]) ** 2 + 10 * (p[1] - a[1]) ** 4), np.zeros(2)))
    out.append((lambda p: float(1e14 * abs(p[0]) + 1e14 * (p[1] - 1) ** 2), np.ones(2)))
    out.append((lambda p: 3.0, np.array([0.5, -0.5])))  # flat: a zero gradient
    out.append((lambda p: float(np.sum((p - 1) ** 2)), np.zeros(3)))
    return out


@pytest.mark.skipif(_prima() is None, reason="SciPy's COBYLA is not PRIMA's in Python here")
@pytest.mark.parametrize("case", range(16))
def test_the_same_evaluations_and_answer_as_scipy(case: int) -> None:
    f, x0 = _problems()[case]
    plain = _run(f, x0)
    with free_of_constraints() as swapped:
        fast = _run(f, x0)
    assert swapped and fast == plain


@pytest.mark.skipif(_prima() is None, reason="SciPy's COBYLA is not PRIMA's in Python here")
def test_a_constrained_problem_runs_as_is_and_the_swap_ends_with_the_block() -> None:
    cobylb, _ = _prima()  # type: ignore[misc]
    before = cobylb.getcpen, cobylb.trstlp
    ring = {"type": "ineq", "fun": lambda p: 1 - p[0] ** 2 - p[1] ** 2}
    plain = _run(lambda p: float(p[0] + 2 * p[1]), np.zeros(2), constraints=ring)
    with free_of_constraints():
        fast = _run(lambda p: float(p[0] + 2 * p[1]), np.zeros(2), constraints=ring)
    assert fast == plain and (cobylb.getcpen, cobylb.trstlp) == before
