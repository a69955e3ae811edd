"""The decision path's fast paths (fewer numpy calls per served task) answer what the code
before them answered, bit for bit (``reference_paths.py`` keeps that code verbatim): the
cost-aware allocation in one chunk or many, with or without a job spread, compiled or not;
the quantiles of rows already in order; the choice under a kill cap; ``p_sufficient``
with its three CDFs and three places computed in one pass each."""

from __future__ import annotations

import numpy as np
import pytest
import reference_paths as ref
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.allocation import allocate, cost_kernels
from scoutless.allocation.allocate import choose, cost_allocation, weighted_quantiles
from scoutless.allocation.context import JobContext
from scoutless.allocation.reconcile import sufficient_probabilities, sufficient_probability
from scoutless.allocation.site import SiteRules
from scoutless.allocation.values import ConformalLevels, JobSpread, ValueDistribution
from scoutless.config import Prices
from scoutless.fast_paths import current
from scoutless.targets.bins import TargetBins

#: up to this many values the normal is computed on Python floats, one more: by scipy
SCALAR_MAX = current().scalar_values

RULES = [
    SiteRules(),
    SiteRules(memory_kill_factor=1.5, short_maxtime_s=43_200.0, himem_mb_per_core=4000.0,
              long_load=0.5, himem_load=0.9, pool_cores=5000.0, long_cores=800.0,
              himem_cores=300.0, pool_load=0.7, pool_residual_h=2.0, long_residual_h=6.0,
              himem_residual_h=3.0),
    SiteRules(short_maxtime_s=3600.0, long_cores=100.0, long_load=0.3, long_residual_h=1.0),
]  # fmt: skip
FIELDS = ("value", "p_sufficient", "expected_cost", "scouted_cost", "kill_probability")


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bit for bit (any NaN equal to any NaN: its payload is no answer)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    nan = np.isnan(a)
    return a.shape == b.shape and bool(
        np.array_equal(nan, np.isnan(b)) and np.array_equal(_bits(a[~nan]), _bits(b[~nan]))
    )


def _job(rng: np.random.Generator, n: int) -> JobContext:
    return JobContext(
        cores=rng.choice([1.0, 8.0, 0.0], n), wall_s=rng.lognormal(9, 1.5, n),
        nevents=rng.choice([0.0, 50.0, 5000.0], n), core_power=rng.uniform(5, 20, n),
        cpu_efficiency=rng.uniform(40, 100, n), base_walltime_s=np.full(n, 600.0),
        n_jobs=rng.choice([0.0, 1.0, 40.0], n),
    )  # fmt: skip


def _dist(rng: np.random.Generator, n: int, target: str) -> ValueDistribution:
    mu = rng.normal(7.5 if target == "memory" else 3.0, 1.5, n)
    sigma = rng.choice([1e-9, 1e-4, 0.3, 1.0, 3.0], n)  # tiny: ties on the grid
    return ValueDistribution.of(-1.0, mu, sigma)


@pytest.fixture(scope="module", params=[False, True], ids=["numpy", "compiled"])
def kernels(request):  # type: ignore[no-untyped-def]
    had = cost_kernels.loaded()
    if request.param:
        assert cost_kernels.load()
    else:
        cost_kernels.unload()
    yield
    if had:
        cost_kernels.load()
    else:
        cost_kernels.unload()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    n=st.sampled_from([1, 2, 3, 8, 70]),
    target=st.sampled_from(["memory", "cputime"]),
    rules=st.sampled_from(RULES),
    cap=st.sampled_from([None, 0.01, 0.25, 0.5]),
    grid=st.sampled_from([8, 48]),
    calibrated=st.booleans(),
    spread=st.booleans(),
)
def test_the_cost_allocation_is_the_one_before_bit_for_bit(
    kernels, seed, n, target, rules, cap, grid, calibrated, spread
):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    dist, job = _dist(rng, n, target), _job(rng, n)
    levels = ConformalLevels(np.sort(rng.normal(0, 1.2, 40))) if calibrated else None
    spreads = JobSpread.equal(rng.lognormal(0, 0.3, (n, 3))) if spread else None
    args = (target, dist, levels, job, rules, Prices(), grid)
    want = ref.cost_allocation(*args, spread=spreads, max_kill_probability=cap)
    got = cost_allocation(*args, spread=spreads, max_kill_probability=cap)
    for name in FIELDS:
        assert _same(getattr(got, name), getattr(want, name)), name
    if not spread:  # JobSpread.none given as such: the general path, the same numbers
        given_none = cost_allocation(*args, spread=JobSpread.none(n), max_kill_probability=cap)
        for name in FIELDS:
            assert _same(getattr(given_none, name), getattr(want, name)), name


def test_many_chunks_answer_as_one(monkeypatch):
    rng = np.random.default_rng(3)
    n = 9
    args = ("memory", _dist(rng, n, "memory"), None, _job(rng, n), RULES[1], Prices(), 48)
    one = cost_allocation(*args, max_kill_probability=0.25)
    monkeypatch.setattr(allocate, "_BLOCK", 1)  # a task per chunk
    many = cost_allocation(*args, max_kill_probability=0.25)
    want = ref.cost_allocation(*args, max_kill_probability=0.25, block=1)
    for name in FIELDS:
        assert _same(getattr(one, name), getattr(many, name)), name
        assert _same(getattr(many, name), getattr(want, name)), name


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 100_000), rows=st.integers(1, 6), width=st.integers(1, 60))
def test_quantiles_of_sorted_rows_are_the_sorting_ones(seed, rows, width):
    rng = np.random.default_rng(seed)
    values = np.sort(rng.choice([0.0, 1.0, 2.5, np.inf, -3.0], (rows, width)), axis=1)
    if seed % 2:  # distinct values as well as ties
        values = np.sort(rng.lognormal(0, 2, (rows, width)), axis=1)
    weights = rng.dirichlet(np.ones(width))
    levels = np.unique(np.r_[rng.random(7), 0.0, 1.0, 0.75])
    assert _same(weighted_quantiles(values, weights, levels),
                 ref.weighted_quantiles(values, weights, levels))  # fmt: skip
    unsorted = values[:, ::-1] if width > 1 else values
    assert _same(weighted_quantiles(unsorted, weights, levels),
                 ref.weighted_quantiles(unsorted, weights, levels))  # fmt: skip
    with_nan = values.copy()
    with_nan[0, 0] = np.nan
    assert _same(weighted_quantiles(with_nan, weights, levels),
                 ref.weighted_quantiles(with_nan, weights, levels))  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 100_000), cap=st.sampled_from([None, 0.0, 0.1, 0.5]))
def test_the_choice_is_the_one_before(seed, cap):
    rng = np.random.default_rng(seed)
    c, k = 5, 12
    candidates = rng.choice([1.0, 2.0, 3.0, 5.0], (c, k))  # equal candidates: ties by size
    expected = rng.choice([0.5, 1.0, 1.0 + 1e-10, 2.0, np.inf], (c, k))
    p_kill = rng.choice([0.0, 0.05, 0.3, 0.9], (c, k))
    p_kill[0] = 0.95  # a row no candidate meets the cap in
    got = choose(candidates, expected, p_kill.copy(), cap)
    assert np.array_equal(got, ref.choose(candidates, expected, p_kill.copy(), cap))


BINS = TargetBins(
    "memory", "MB/core", (0, 1000, 2000, 4000, float("inf")), ("<=1GB", "1-2GB", "2-4GB", ">4GB")
)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.sampled_from([1, 3, 8, SCALAR_MAX, SCALAR_MAX + 1, 200]))
def test_p_sufficient_is_the_one_before_bit_for_bit(seed, n):
    """Around the size where the normal's CDF moves from Python floats to scipy: each row
    is computed as its own call was."""
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.full(BINS.n_classes, 0.5), n)
    dist = ValueDistribution.of(-1.0, rng.normal(7.0, 2.0, n), rng.choice([1e-9, 0.05, 1.5], n))
    value = np.exp(rng.normal(7.5, 2.0, n))
    value[rng.random(n) < 0.2] = rng.choice([0.0, 1000.0, 4000.0, np.inf, np.nan, -5.0])
    classes = np.maximum(BINS.classify(value), 0)
    classes[rng.random(n) < 0.1] = 7  # out of range: clipped to the last class
    edges = np.asarray(BINS.edges)
    got = sufficient_probability(proba, edges, classes, dist, value)
    assert _same(got, ref.sufficient_probability(proba, edges, classes, dist, value))


@pytest.mark.parametrize(
    "offset, mu, sigma",
    [
        (-1.0, np.array([7.0, np.nan, -np.inf]), np.array([0.0, 1e-12, np.nan])),
        (np.array([0.5, -1.0, 2.0]), [1.0, 2.0, 3.0], 0.2),
        (0, 3, 1e-20),  # scalars: one task
        (-1.0, np.array([1.0], dtype=np.float32), np.array([2.0], dtype=np.float32)),
    ],
)
def test_a_distribution_is_made_as_before(offset, mu, sigma):
    got, want = ValueDistribution.of(offset, mu, sigma), ref.distribution_of(offset, mu, sigma)
    for name in ("offset", "mu", "sigma"):
        assert _same(getattr(got, name), getattr(want, name)), name
    got.offset[0] = 99.0  # offset and sigma are the distribution's own
    got.sigma[0] = 99.0
    assert np.asarray(offset).flat[0] != 99.0 and np.asarray(sigma).flat[0] != 99.0


@pytest.mark.parametrize(
    "x", [np.array([1.0, 2.5]), np.array([np.nan, np.inf, -np.inf, 1.0]), np.array([])]
)
def test_costs_read_as_nan_to_num_reads_them(x):
    assert _same(allocate._nan_to_num(x), np.nan_to_num(x))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.sampled_from([1, 4, 8, SCALAR_MAX, SCALAR_MAX + 1]))
def test_every_targets_p_sufficient_in_one_pass_is_each_ones_own(seed, n):
    """Targets of 2 to 5 classes, open or closed last class: each target's numbers are
    those of its own call before."""
    rng = np.random.default_rng(seed)
    readings, want = [], []
    for edges in ([0.0, 500.0, np.inf], [0.0, 1e3, 2e3, 4e3, np.inf], [0.0, 10.0, 60.0, 600.0],
                  [0.0, 3600.0, 7200.0, 14400.0, 28800.0, np.inf]):  # fmt: skip
        edges = np.asarray(edges)
        k = len(edges) - 1
        proba = rng.dirichlet(np.full(k, 0.5), n)
        dist = ValueDistribution.of(-1.0, rng.normal(np.log(edges[1]), 2.0, n),
                                    rng.choice([1e-9, 0.05, 1.5], n))  # fmt: skip
        value = np.exp(rng.normal(np.log(edges[1]), 2.5, n))
        value[rng.random(n) < 0.2] = rng.choice([0.0, edges[1], np.inf, np.nan])
        classes = np.searchsorted(edges[1:-1], value)
        classes[rng.random(n) < 0.1] = rng.choice([-1, k + 2])
        readings.append((proba, edges, classes, dist, value))
        want.append(ref.sufficient_probability(proba, edges, classes, dist, value))
    got = sufficient_probabilities(readings)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert _same(g, w)


@pytest.mark.parametrize(
    "present", [(), ("corecount",), ("corecount", "input_nevents", "nevents_per_job"), None]
)
def test_a_job_is_read_from_the_features_as_before(present):
    from scoutless.allocation.context import job_context
    from scoutless.config import PandaDefaults

    rng = np.random.default_rng(5)
    names = ("corecount", "input_nevents", "nevents_per_job", "input_nfiles", "nfiles_per_job")
    values = rng.choice([np.nan, 0.0, -1.0, 3.0, 1e4, np.inf], (len(names), 12))
    numbers = {k: v for k, v in zip(names, values, strict=True) if present is None or k in present}
    job, want = job_context(numbers, 12, PandaDefaults()), ref.job_columns(numbers, 12)
    for name, column in want.items():
        assert _same(getattr(job, name), column), name


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    cap=st.sampled_from([None, 0.0, 0.1, 0.5]),
    k=st.sampled_from([1, 2, 12, 51]),
    nan=st.booleans(),
)
def test_the_compiled_choice_is_numpys(seed, cap, k, nan):
    """Ties of size and of cost, infinite costs, rows no candidate meets the cap in, NaN
    anywhere: the same index and readings as choose and the numpy gathers."""
    had = cost_kernels.loaded()
    assert cost_kernels.load()
    try:
        _compare_choices(seed, cap, k, nan)
    finally:
        if not had:
            cost_kernels.unload()


def _compare_choices(seed: int, cap: float | None, k: int, nan: bool) -> None:
    rng = np.random.default_rng(seed)
    c, m = 6, 9
    candidates = rng.choice([1.0, 2.0, 3.0, 5.0, -0.0, 0.0, np.inf], (c, k))
    expected = rng.choice([0.5, 1.0, 1.0 + 1e-10, 1.0 + 1e-8, 2.0, np.inf, 0.0], (c, k))
    p_kill = rng.choice([0.0, 0.05, 0.1, 0.1 + 1e-13, 0.3, 0.9], (c, k))
    p_kill[0] = 0.95  # a row no candidate meets the cap in
    if nan:
        for a in (candidates, expected, p_kill):
            a[rng.random((c, k)) < 0.1] = np.nan
    needs = rng.choice([0.5, 1.0, 2.0, 3.0, 6.0, np.nan], (c, m))
    want = ref.choose(candidates, expected, p_kill.copy(), cap)
    rows = np.arange(c)
    compiled = cost_kernels.choice(candidates, expected, p_kill, needs, cap)
    assert compiled is not None
    best, value, cost, kill, covered = compiled
    assert np.array_equal(best, want)
    assert _same(value, candidates[rows, want]) and _same(cost, expected[rows, want])
    assert _same(kill, p_kill[rows, want])
    assert _same(covered, (needs <= candidates[rows, want][:, None]).mean(axis=1))


@pytest.mark.parametrize("calibrated", [False, True])
def test_the_value_allocation_is_the_one_before(calibrated):
    from scoutless.allocation.allocate import value_allocation

    rng = np.random.default_rng(9)
    dist = _dist(rng, 7, "memory")
    levels = ConformalLevels(np.sort(rng.normal(0, 1.2, 40))) if calibrated else None
    for alpha in (0.05, 0.2, 0.05, 0.001):  # again: its coverage remembered
        got, want = value_allocation(dist, levels, alpha), ref.value_allocation(dist, levels, alpha)
        for name in ("value", "p_sufficient", "expected_cost", "scouted_cost"):
            assert _same(getattr(got, name), getattr(want, name)), (alpha, name)


_JOB_FEATURES = ("corecount", "nevents_per_job", "cpuefficiency", "basewalltime",
                 "input_nevents", "input_nfiles", "nfiles_per_job")  # fmt: skip
_ODD_FLOATS = st.sampled_from([np.nan, 0.0, -0.0, -1.0, 0.5, 1.0, 1.5, 3.0, 1e4, 1e300, 1e-300,
                               np.inf, -np.inf, 2.0**53 + 2, 7.0 / 3])  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 16).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.dictionaries(
                st.sampled_from(_JOB_FEATURES),
                st.lists(_ODD_FLOATS | st.floats(), min_size=n, max_size=n),
            ),
            st.none() | st.lists(_ODD_FLOATS | st.floats(), min_size=n, max_size=n),
        )
    )
)
def test_a_few_tasks_job_in_python_is_numpy_s_to_the_bit(case):
    from scoutless.allocation import context
    from scoutless.config import PandaDefaults

    n, columns, wall = case
    numbers = {k: np.asarray(v, dtype=float) for k, v in columns.items()}
    defaults = PandaDefaults()
    wall_s = None if wall is None else np.asarray(wall, dtype=float)
    got = context.job_context(numbers, n, defaults, wall_s)
    with np.errstate(all="ignore"):  # odd floats overflow numpy's divisions, as the service's would
        want = context._array_job_context(numbers, n, defaults, wall_s)
    assert n <= current().few_tasks
    for name, column in vars(want).items():
        mine = getattr(got, name)
        assert mine.dtype == column.dtype and mine.shape == column.shape, name
        assert np.array_equal(mine.view(np.uint64), column.view(np.uint64)), name
