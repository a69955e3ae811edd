"""From a task's value distribution to the number a scheduler allocates.

- ``value_allocation``: the calibrated (1 - alpha) value: under-allocates at most alpha
  (split-conformal, :class:`~scoutless.allocation.values.ConformalLevels`).
- ``cost_allocation``: the value with the least expected cost under the site's rules and
  prices (:mod:`scoutless.allocation.costs`), chosen among the task's calibrated quantiles.
- ``selective``: per task, whether scouting is cheaper than predicting: the jobs' expected
  cost at the cost-aware values against the scouts' wait (and always for a task whose
  categories the model has never seen).

The expectation runs over ``grid_points`` quantiles of the calibrated distribution, at
coverages ``(i + 0.5) / m``, times the ``s`` factors of a task's jobs around its value
(:class:`~scoutless.allocation.values.JobSpread`): m·s equally likely job needs. The
candidates are quantiles of those needs (the grid's coverages, 1 − the kill cap, the
highest), so a task's choice costs about m × m·s evaluations of a closed-form cost
(chunked: 100k tasks in well under 1 GB). Planned kills are a constraint, not only a
price: with ``max_kill_probability`` a candidate whose predicted share of killed jobs is
above it is never chosen (``Settings.allocation.max_kill_probability``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from scoutless.allocation import cost_kernels
from scoutless.allocation.context import JobContext
from scoutless.allocation.costs import COSTS, CostModel, scout_wait_cost
from scoutless.allocation.quantiles import rows_in_order, sorted_columns, weighted_quantiles
from scoutless.allocation.site import SiteRules
from scoutless.allocation.values import ConformalLevels, JobSpread, ValueDistribution, ndtri
from scoutless.config import Prices

#: elements of one priced block (tasks × candidates × job needs): float64 intermediates
#: near 75 MB each
_BLOCK = 9_500_000
#: Allocation's per-task arrays in cost_allocation's order
_FIELDS = ("value", "covered", "cost", "scouted", "kill")


@dataclass(frozen=True)
class Allocation:
    """One target's allocation for n tasks."""

    value: np.ndarray  # (n,) the number to allocate, in the target's unit
    p_sufficient: np.ndarray  # (n,) calibrated P(need <= value)
    #: (n,) expected cost per job of ``value`` (core-hours; NaN where not priced)
    expected_cost: np.ndarray
    #: (n,) expected cost per job at the value the scouts would measure (the need, give
    #: or take ``Prices.scout_error_sigma``)
    scouted_cost: np.ndarray
    #: (n,) predicted probability that a job is killed at ``value`` (None: not priced)
    kill_probability: np.ndarray | None = None


def coverage_grid(m: int) -> np.ndarray:
    """(m,) coverages ``(i + 0.5) / m``: equal-probability points of a distribution."""
    return (np.arange(m) + 0.5) / m


def _read_only_cache(make: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """``make`` of scalar settings made once per arguments, read-only (a served task asks
    for the same grid, levels and scout errors every time)."""

    @functools.lru_cache(maxsize=64)
    def cached(*args: float | int | None) -> np.ndarray:
        out = np.asarray(make(*args))
        out.flags.writeable = False
        return out

    return cached


def z_grid(coverage: np.ndarray, levels: ConformalLevels | None) -> np.ndarray:
    """The standardised levels that hold the given calibrated coverages (the normal's own
    when the distribution is exact, e.g. the generator's truth)."""
    if levels is None:
        return ndtri(coverage)
    return np.quantile(levels.scores, coverage)


def grid_z(grid_points: int, levels: ConformalLevels | None) -> np.ndarray:
    """:func:`z_grid` of the cost grid (:func:`coverage_grid`), made once per grid and
    calibration."""
    if levels is None:
        return _normal_grid_z(grid_points)
    return levels.memo(("grid_z", grid_points), lambda: z_grid(_coverages(grid_points), levels))


def _scout_errors(sigma: float, points: int = 8) -> np.ndarray:
    """(points,) equally likely factors exp(N(0, sigma)) of the scouts' measurement."""
    return np.exp(sigma * ndtri(coverage_grid(points)))


_coverages = _read_only_cache(coverage_grid)
_normal_grid_z = _read_only_cache(lambda m: z_grid(coverage_grid(m), None))
_scout_errors_of = _read_only_cache(_scout_errors)
_job_levels = _read_only_cache(lambda m, cap: candidate_levels(coverage_grid(m), cap))
#: the needs' weights of a grid of m points under JobSpread.none, as _priced_chunk lays
#: them out for any spread
_plain_weights = _read_only_cache(lambda m: np.tile(np.ones(1) / m, m))
#: the columns of a sorted plain grid's quantiles at the candidate levels
_plain_columns = _read_only_cache(
    lambda m, cap: sorted_columns(_plain_weights(m), _job_levels(m, cap), m)
)


def value_allocation(
    dist: ValueDistribution, levels: ConformalLevels | None, alpha: float
) -> Allocation:
    """The calibrated (1 - alpha) quantile of every task."""
    if levels is None:
        z, covered = float(ndtri(1 - alpha)), 1 - alpha
    else:
        z = levels.z_at(alpha)  # its coverage once per alpha: a served task asks the same
        covered = float(levels.memo(("coverage", alpha), lambda: levels.coverage(z)))
    value = dist.at_z(z)
    n = len(dist)
    return Allocation(value, _filled(n, covered), _filled(n, np.nan), _filled(n, np.nan))


def _filled(n: int, value: float) -> np.ndarray:
    """``np.full(n, value)`` without its Python-level wrapper (on every served task)."""
    out = np.empty(n)
    out.fill(value)
    return out


def cost_allocation(
    target: str,
    dist: ValueDistribution,
    levels: ConformalLevels | None,
    job: JobContext,
    rules: SiteRules,
    prices: Prices,
    grid_points: int = 48,
    *,
    spread: JobSpread | None = None,
    max_kill_probability: float | None = None,
) -> Allocation:
    """Per task, the allocation with the least expected cost per job among those whose
    predicted kill probability per job is at most ``max_kill_probability`` (None: no cap;
    where no candidate meets it, the one least likely to kill). The expectation runs over
    the task's calibrated value and, through ``spread``, its jobs around that value."""
    if target not in COSTS:
        raise ValueError(f"no cost model for target {target!r}; priced: {', '.join(COSTS)}")
    if max_kill_probability is not None and not 0 < max_kill_probability < 1:
        raise ValueError(f"{max_kill_probability=} must be in (0, 1)")
    plain, spread = spread is None, JobSpread.none(len(dist)) if spread is None else spread
    if len(spread) != len(dist):
        raise ValueError(f"a job spread of {len(spread)} tasks for {len(dist)} distributions")
    zs = grid_z(grid_points, levels)
    job_levels = _job_levels(grid_points, max_kill_probability)
    points = grid_points * spread.factors.shape[1]
    chunk = max(1, _BLOCK // (points * (len(job_levels) + 3)))
    if 0 < len(dist) <= chunk:  # one chunk (a served request): its arrays are the answer's
        part = _priced_chunk(COSTS[target], dist.grid_at_z(zs), spread, job, rules, prices,
                             job_levels, max_kill_probability, plain=plain)  # fmt: skip
        return Allocation(*(part[k] for k in _FIELDS))
    out = {k: np.empty(len(dist)) for k in _FIELDS}
    for lo in range(0, len(dist), chunk):
        rows = slice(lo, lo + chunk)
        part = _priced_chunk(
            COSTS[target], dist.take(rows).grid_at_z(zs), spread.take(rows), job.take(rows),
            rules, prices, job_levels, max_kill_probability, plain=plain,
        )  # fmt: skip
        for key, values in part.items():
            out[key][rows] = values
    return Allocation(*(out[k] for k in _FIELDS))


def candidate_levels(coverages: np.ndarray, max_kill_probability: float | None) -> np.ndarray:
    """Levels of a job's need worth allocating: the grid's, the least the cap allows
    (1 - cap) and the highest point (never killed within the grid)."""
    extra = [1.0] if max_kill_probability is None else [1.0 - max_kill_probability, 1.0]
    return np.unique(np.r_[coverages, extra])


def _priced_chunk(
    model: CostModel,
    task_needs: np.ndarray,
    spread: JobSpread,
    job: JobContext,
    rules: SiteRules,
    prices: Prices,
    job_levels: np.ndarray,
    cap: float | None,
    *,
    plain: bool = False,
) -> dict[str, np.ndarray]:
    """One chunk's choice: ``task_needs`` (c, m) equally likely values times ``spread``'s
    (c, s) factors: (c, m·s) job needs, each with its probability. ``plain``: the spread
    is :meth:`JobSpread.none` (factors of 1: the needs are the task's values as they are).
    A need below 0 (a model in log1p space reaches down to -1) is no need: 0, so no cost
    is negative."""
    task_needs = np.maximum(task_needs, 0.0)
    c, m = task_needs.shape
    if plain:
        per_job, weights = task_needs[:, :, None], _plain_weights(m)
    else:
        per_job = task_needs[:, :, None] * spread.factors[:, None, :]  # (c, m, s)
        weights = np.tile(spread.weights / m, m)  # (m·s,), task point-major as job_needs
    job_needs = per_job.reshape(c, -1)
    if plain and job_levels is _job_levels(m, cap) and rows_in_order(job_needs):
        quantiles = job_needs[:, _plain_columns(m, cap)]  # weighted_quantiles' columns
    else:
        quantiles = weighted_quantiles(job_needs, weights, job_levels)
    candidates = model.candidates(quantiles, rules)
    alloc, need = candidates[:, :, None], job_needs[:, None, :]
    task_args = model.task_args(job, rules, prices)  # the two grids' per-task arguments
    cost, killed = model.cost_and_killed(alloc, need, job, rules, prices, task_args)
    expected = cost @ weights  # (c, k)
    p_kill = killed @ weights
    compiled = cost_kernels.choice(candidates, expected, p_kill, task_needs, cap)
    if compiled is not None:  # the same choice and readings in one compiled pass
        _, chosen, cost, kill, covered = compiled
    else:
        best = choose(candidates, expected, p_kill, cap)
        rows = np.arange(len(best))
        chosen, cost, kill = candidates[rows, best], expected[rows, best], p_kill[rows, best]
        covered = (task_needs <= chosen[:, None]).sum(axis=1) / m  # np.mean of 0/1
    errors = _scout_errors_of(prices.scout_error_sigma)
    measured = task_needs[:, :, None, None] * errors[None, None, :, None]
    scouted = (
        model.cost_only(measured, per_job[:, :, None, :], job, rules, prices, task_args)
        @ spread.weights
    )
    return {  # the mean as np.mean takes it (its sum, over the count), without its checks
        "value": chosen,
        "covered": covered,
        "cost": cost,
        "scouted": np.add.reduce(scouted, axis=(1, 2)) / (scouted.shape[1] * scouted.shape[2]),
        "kill": kill,
    }


def choose(
    candidates: np.ndarray, expected: np.ndarray, p_kill: np.ndarray, cap: float | None
) -> np.ndarray:
    """(c,) per row the index of the cheapest candidate whose kill probability is within
    ``cap`` (rows where none is: among those least likely to kill); ties (e.g. every value
    below the slot's own share costs the same): the largest."""
    allowed = np.ones(expected.shape, bool) if cap is None else p_kill <= cap + 1e-12
    some = allowed.any(axis=1)
    if not some.all():
        none = ~some
        allowed[none] = p_kill[none] <= p_kill[none].min(axis=1, keepdims=True)
    cost = np.where(allowed, expected, np.inf)
    order = np.argsort(candidates, axis=1, kind="stable")[:, ::-1]
    rows = np.arange(len(order))
    by_size = cost[rows[:, None], order]
    tied = by_size <= by_size.min(axis=1, keepdims=True) * (1 + 1e-9) + 1e-12
    return order[rows, tied.argmax(axis=1)]


@dataclass(frozen=True)
class ScoutChoice:
    """Per task: scout or not, and the two expected costs the choice compared."""

    scout: np.ndarray  # (n,) bool
    predict_cost: np.ndarray  # (n,) the task's jobs at the cost-aware values, core-hours
    scout_cost: np.ndarray  # (n,) the scouts' wait and the jobs at the measured need
    unknown: np.ndarray  # (n,) bool: scouted because the model never saw its categories

    def reasons(self) -> list[str]:
        """Per task, one sentence saying why it is (not) scouted."""
        out = []
        for scout, unknown, p, s in zip(
            self.scout, self.unknown, self.predict_cost, self.scout_cost, strict=True
        ):
            if unknown:
                out.append("scout: categories the model has never seen")
            elif scout:
                out.append(f"scout: predicting costs {p:.1f} core-hours, scouting {s:.1f}")
            else:
                out.append(f"predict: predicting costs {p:.1f} core-hours, scouting {s:.1f}")
        return out


def unseen_application(unknown: list[dict[str, str]], features: list[str]) -> np.ndarray:
    """(n,) whether a task has an unseen value in one of ``features`` (the per-row unknown
    categories of ``FeatureEncoder.unknown_categories`` / ``InspectedFeatures.unknown``)."""
    return np.array([any(f in row for f in features) for row in unknown], dtype=bool)


def selective(
    allocations: dict[str, Allocation],
    job: JobContext,
    prices: Prices,
    unknown: np.ndarray | None = None,
) -> ScoutChoice:
    """Scout where predicting costs more than scouting: the task's jobs at the cost-aware
    values, against the scouts' wait plus its jobs at the need the scouts measure."""
    n_jobs = np.maximum(job.n_jobs, 1)
    predict = n_jobs * sum(_nan_to_num(a.expected_cost) for a in allocations.values())
    scouted = n_jobs * sum(_nan_to_num(a.scouted_cost) for a in allocations.values())
    scouting = scout_wait_cost(job, prices) + scouted
    unseen = np.zeros(len(job), bool) if unknown is None else np.asarray(unknown, bool)
    return ScoutChoice(unseen | (predict > scouting), np.asarray(predict, float), scouting, unseen)


def _nan_to_num(x: np.ndarray) -> np.ndarray:
    """``np.nan_to_num(x)``, whose Python-level checks run on every served task: ``x`` itself
    where it is all finite (the sum reading it makes a new array; ``all`` by its ufunc)."""
    return x if np.logical_and.reduce(np.isfinite(x), None) else np.nan_to_num(x)
