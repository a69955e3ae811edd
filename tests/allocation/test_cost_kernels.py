"""The compiled cost grid (``allocation/cost_kernels.py``) prices every allocation and kill
as the numpy cost functions do, bit for bit, under every kind of site rules; and the
cost-aware allocation it feeds chooses the same values to the bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.allocation import cost_kernels
from scoutless.allocation.allocate import cost_allocation
from scoutless.allocation.compiled_costs import compiled_grid
from scoutless.allocation.context import JobContext
from scoutless.allocation.costs import (
    COSTS,
    cputime_cost,
    cputime_killed,
    memory_cost,
    memory_killed,
)
from scoutless.allocation.site import SiteRules
from scoutless.allocation.values import JobSpread, ValueDistribution
from scoutless.config import Prices

RULES = [
    SiteRules(),
    SiteRules(memory_kill_factor=1.0, short_maxtime_s=86_400.0, himem_mb_per_core=3000.0),
    SiteRules(
        memory_kill_factor=1.5,
        short_maxtime_s=43_200.0,
        himem_mb_per_core=4000.0,
        long_load=0.5,
        himem_load=0.95,
        pool_cores=5000.0,
        long_cores=800.0,
        himem_cores=300.0,
        pool_load=0.7,
        pool_residual_h=2.0,
        long_residual_h=6.0,
        himem_residual_h=3.0,
    ),
    SiteRules(short_maxtime_s=3600.0, long_cores=100.0, long_load=0.3, long_residual_h=1.0),
]


@pytest.fixture
def compiled():
    had = cost_kernels.loaded()
    assert cost_kernels.load()
    yield
    if not had:
        cost_kernels.unload()


def _job(rng: np.random.Generator, n: int) -> JobContext:
    return JobContext(
        cores=rng.choice([1.0, 8.0, 0.0], n), wall_s=rng.lognormal(9, 1.5, n),
        nevents=rng.choice([0.0, 50.0, 5000.0], n), core_power=rng.uniform(5, 20, n),
        cpu_efficiency=rng.uniform(40, 100, n), base_walltime_s=np.full(n, 600.0),
        n_jobs=rng.choice([0.0, 1.0, 40.0], n),
    )  # fmt: skip


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


@pytest.mark.parametrize("rules", RULES)
def test_compiled_costs_and_kills_equal_the_numpy_functions_bit_for_bit(compiled, rules):
    rng = np.random.default_rng(0)
    prices = Prices()
    n = 7
    job = _job(rng, n)
    for scale, cost, killed, model in (
        (2500.0, memory_cost, lambda a, x, j, r: memory_killed(a, x, r), COSTS["memory"]),
        (40.0, cputime_cost, cputime_killed, COSTS["cputime"]),
    ):
        alloc = scale * rng.lognormal(0, 1, (n, 30, 1))
        need = scale * rng.lognormal(0, 1, (n, 1, 48))
        need[0, 0, :5] = alloc[0, :5, 0]  # ties: a need exactly at its allocation
        need[1, 0, 0] = 0.0
        got_cost, got_killed = model.compiled(alloc, need, job, rules, prices)
        assert np.array_equal(_bits(got_cost), _bits(cost(alloc, need, job, rules, prices)))
        assert np.array_equal(got_killed, killed(alloc, need, job, rules).astype(float))
        # the scouts' grid: each task point's measurements against its jobs' needs
        measured = alloc[:, :6, :, None] * rng.lognormal(0, 0.2, (1, 1, 8, 1))  # (n, 6, 8, 1)
        jobs = need[:, :, None, :6] * rng.lognormal(0, 0.3, (n, 6, 1, 1))  # (n, 6, 1, 6)
        assert np.array_equal(
            _bits(model.compiled(measured, jobs, job, rules, prices)[0]),
            _bits(cost(measured, jobs, job, rules, prices)),
        )
        # another shape is left to numpy, with the same answer
        assert model.compiled(alloc[:, :, 0], need[:, 0, :1], job, rules, prices) is None
        assert np.array_equal(
            _bits(model.cost_only(alloc[:, :, 0], need[:, 0, :1], job, rules, prices)),
            _bits(cost(alloc[:, :, 0], need[:, 0, :1], job, rules, prices)),
        )


@pytest.mark.parametrize("target", ["memory", "cputime"])
@pytest.mark.parametrize("rules", RULES[1:3])
def test_the_cost_allocation_is_the_same_compiled_or_not(target, rules):
    rng = np.random.default_rng(1)
    n = 9
    dist = ValueDistribution.of(-1.0, rng.normal(7 if target == "memory" else 3, 1, n),
                                rng.uniform(0.1, 1.0, n))  # fmt: skip
    job, spread = _job(rng, n), JobSpread.equal(rng.lognormal(0, 0.3, (n, 4)))

    def allocate():  # type: ignore[no-untyped-def]
        return cost_allocation(target, dist, None, job, rules, Prices(), 48, spread=spread,
                               max_kill_probability=0.25)  # fmt: skip

    had = cost_kernels.loaded()
    cost_kernels.unload()
    plain = allocate()
    assert cost_kernels.load()
    fast = allocate()
    if not had:
        cost_kernels.unload()
    for name in ("value", "p_sufficient", "expected_cost", "scouted_cost", "kill_probability"):
        assert np.array_equal(_bits(getattr(fast, name)), _bits(getattr(plain, name))), name
    assert math.isfinite(float(fast.expected_cost.sum()))


def test_a_kernel_numba_cannot_compile_leaves_numpy_serving(monkeypatch, caplog):
    """E.g. no writable cache folder: the service starts and prices in numpy."""
    kernels, built = cost_kernels._CODE.active, cost_kernels._CODE.built

    def fail() -> None:
        raise RuntimeError("cannot cache function: no locator available")

    cost_kernels._CODE.active = cost_kernels._CODE.built = None
    monkeypatch.setattr(cost_kernels._CODE, "build", fail)
    try:
        assert not cost_kernels.load()
        assert not cost_kernels.loaded()
        assert "could not compile" in caplog.text
    finally:
        cost_kernels._CODE.active, cost_kernels._CODE.built = kernels, built


def test_the_machine_code_sums_the_components_the_numpy_definition_sums():
    """A component added to costs.py and not to jit_costs.py leaves numpy pricing (the
    kernel is refused), and this test names the missing twin."""
    from scoutless.allocation import jit_costs

    for target, model in COSTS.items():
        assert jit_costs.COMPONENTS[target] == model.names, target
        rng = np.random.default_rng(0)
        parts = model.components(rng.uniform(1, 9, (2, 3, 1)), rng.uniform(1, 9, (2, 1, 4)),
                                 _job(rng, 2), RULES[2], Prices())  # fmt: skip
        assert tuple(parts) == model.names, target


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rules=st.sampled_from(RULES),
    scale=st.floats(0.01, 1e5),
    prices=st.fixed_dictionaries({
        name: st.floats(0.0, 50.0) for name in (
            "kill_overhead", "memory_gb_hour", "memory_overuse_gb_hour", "himem_core_hour",
            "long_queue_core_hour", "walltime_slack_core_hour", "scout_delay_hour")
    }),
)  # fmt: skip
def test_each_compiled_price_component_equals_its_numpy_definition(seed, rules, scale, prices):
    had = cost_kernels.loaded()
    assert cost_kernels.load()
    try:
        rng = np.random.default_rng(seed)
        n, at = 3, Prices(**prices)
        job = _job(rng, n)
        alloc = scale * rng.lognormal(0, 1.5, (n, 5, 1))
        need = scale * rng.lognormal(0, 1.5, (n, 1, 7))
        need[0, 0, :2] = alloc[0, :2, 0]  # a need exactly at its allocation
        for target, model in COSTS.items():
            want = model.components(alloc, need, job, rules, at)
            for k, name in enumerate(model.names):
                got = compiled_grid(target, model.names, alloc, need, job, rules, at, only=k)
                expected = np.broadcast_to(want[name], got[0].shape)
                assert np.array_equal(_bits(got[0]), _bits(expected)), (target, name)
    finally:
        if not had:
            cost_kernels.unload()
