"""The decision path as it was before its per-call overhead was cut, kept verbatim as the
oracle the fast paths are held to bit for bit (``test_fast_paths.py``): the cost-aware
allocation's chunk, quantiles and choice, and the answer's ``p_sufficient``."""

from __future__ import annotations

import numpy as np

from scoutless.allocation.allocate import (
    _FIELDS,
    Allocation,
    _job_levels,
    _scout_errors_of,
    grid_z,
)
from scoutless.allocation.context import JobContext
from scoutless.allocation.costs import COSTS, CostModel
from scoutless.allocation.quantiles import _BROADCAST_MAX
from scoutless.allocation.site import SiteRules
from scoutless.allocation.values import ConformalLevels, JobSpread, ValueDistribution
from scoutless.config import Prices

_PRIOR_MASS = 1e-3


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
    block: int = 9_500_000,
) -> Allocation:
    spread = JobSpread.none(len(dist)) if spread is None else spread
    zs = grid_z(grid_points, levels)
    job_levels = _job_levels(grid_points, max_kill_probability)
    points = grid_points * spread.factors.shape[1]
    chunk = max(1, block // (points * (len(job_levels) + 3)))
    out = {k: np.empty(len(dist)) for k in _FIELDS}
    for lo in range(0, len(dist), chunk):
        rows = slice(lo, lo + chunk)
        part = _priced_chunk(
            COSTS[target], dist.take(rows).grid_at_z(zs), spread.take(rows), job.take(rows),
            rules, prices, job_levels, max_kill_probability,
        )  # fmt: skip
        for key, values in part.items():
            out[key][rows] = values
    return Allocation(*(out[k] for k in _FIELDS))


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, levels: np.ndarray) -> np.ndarray:
    order = np.argsort(values, axis=1, kind="stable")
    ranked = np.take_along_axis(values, order, axis=1)
    cumulative = np.cumsum(weights[order], axis=1)
    bounds = np.asarray(levels, dtype=float) - 1e-12
    if cumulative.size * len(bounds) <= _BROADCAST_MAX:
        at = (cumulative[:, :, None] < bounds).sum(axis=1)
    else:
        at = np.stack([(cumulative < b).sum(axis=1) for b in bounds], axis=1)
    return np.take_along_axis(ranked, np.minimum(at, values.shape[1] - 1), axis=1)


def _priced_chunk(
    model: CostModel, task_needs: np.ndarray, spread: JobSpread, job: JobContext,
    rules: SiteRules, prices: Prices, job_levels: np.ndarray, cap: float | None,
) -> dict[str, np.ndarray]:  # fmt: skip
    task_needs = np.maximum(task_needs, 0.0)  # a need below 0 is none (the rule since)
    c, m = task_needs.shape
    per_job = task_needs[:, :, None] * spread.factors[:, None, :]
    job_needs = per_job.reshape(c, -1)
    weights = np.tile(spread.weights / m, m)
    candidates = model.candidates(weighted_quantiles(job_needs, weights, job_levels), rules)
    alloc, need = candidates[:, :, None], job_needs[:, None, :]
    cost, killed = model.cost_and_killed(alloc, need, job, rules, prices)
    expected = cost @ weights
    p_kill = killed @ weights
    best = choose(candidates, expected, p_kill, cap)
    rows = np.arange(len(best))
    chosen = candidates[rows, best]
    errors = _scout_errors_of(prices.scout_error_sigma)
    measured = task_needs[:, :, None, None] * errors[None, None, :, None]
    scouted = model.cost_only(measured, per_job[:, :, None, :], job, rules, prices) @ spread.weights
    return {
        "value": chosen,
        "covered": (task_needs <= chosen[:, None]).mean(axis=1),
        "cost": expected[rows, best],
        "scouted": scouted.mean(axis=(1, 2)),
        "kill": p_kill[rows, best],
    }


def choose(
    candidates: np.ndarray, expected: np.ndarray, p_kill: np.ndarray, cap: float | None
) -> np.ndarray:
    allowed = np.ones(expected.shape, bool) if cap is None else p_kill <= cap + 1e-12
    none = ~allowed.any(axis=1)
    allowed[none] = p_kill[none] <= p_kill[none].min(axis=1, keepdims=True)
    cost = np.where(allowed, expected, np.inf)
    order = np.argsort(candidates, axis=1, kind="stable")[:, ::-1]
    by_size = np.take_along_axis(cost, order, axis=1)
    tied = by_size <= by_size.min(axis=1, keepdims=True) * (1 + 1e-9) + 1e-12
    return order[np.arange(len(order)), tied.argmax(axis=1)]


def cdf(dist: ValueDistribution, value: np.ndarray) -> np.ndarray:
    from scoutless.allocation.values import ndtr

    above = np.asarray(value, dtype=float) - dist.offset
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (np.log(np.where(above > 0, above, np.nan)) - dist.mu) / dist.sigma
    return np.where(above > 0, ndtr(np.where(np.isnan(z), -np.inf, z)), 0.0)


def place_in_class(value: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    low = np.log1p(np.maximum(lo, 0.0))
    with np.errstate(invalid="ignore", over="ignore"):
        span = np.log1p(np.maximum(hi, 0.0)) - low
        place = (np.log1p(np.maximum(value, 0.0)) - low) / np.where(span > 0, span, np.nan)
    return np.where(np.isfinite(hi), np.where(np.isnan(place), 1.0, place), 0.5).clip(0.0, 1.0)


def sufficient_probability(
    proba: np.ndarray, edges: np.ndarray, classes: np.ndarray, dist: ValueDistribution,
    value: np.ndarray,
) -> np.ndarray:  # fmt: skip
    proba = np.asarray(proba, dtype=float)
    n = len(proba)
    rows = np.arange(n)
    c = np.clip(np.asarray(classes, dtype=int), 0, proba.shape[1] - 1)
    edges = np.asarray(edges, dtype=float)
    lo, hi = edges[c], edges[c + 1]
    below = np.cumsum(proba, axis=1)[rows, c] - proba[rows, c]
    g_lo, g_hi, g_v = cdf(dist, lo), cdf(dist, hi), cdf(dist, np.minimum(value, hi))
    inside = (g_v - g_lo + _PRIOR_MASS * place_in_class(value, lo, hi)) / (
        g_hi - g_lo + _PRIOR_MASS
    )
    return (below + proba[rows, c] * inside.clip(0.0, 1.0)).clip(0.0, 1.0)


def distribution_of(offset: object, mu: object, sigma: object) -> ValueDistribution:
    mu_a = np.atleast_1d(np.asarray(mu, dtype=float))
    offset_a = np.broadcast_to(np.asarray(offset, dtype=float), mu_a.shape).copy()
    sigma_a = np.maximum(np.broadcast_to(np.asarray(sigma, dtype=float), mu_a.shape), 1e-9)
    return ValueDistribution(offset_a, mu_a, sigma_a.copy())


def job_columns(numbers: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """``context``'s columns, events per job and jobs, written out plainly."""

    def column(name: str, default: float) -> np.ndarray:
        values = np.asarray(numbers.get(name, np.full(n, np.nan)), dtype=float)
        return np.where(np.isfinite(values) & (values > 0), values, default)

    nan = np.full(n, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        by_events = np.asarray(numbers.get("input_nevents", nan), float) / np.asarray(
            numbers.get("nevents_per_job", nan), float
        )
        by_files = np.asarray(numbers.get("input_nfiles", nan), float) / np.asarray(
            numbers.get("nfiles_per_job", nan), float
        )
    jobs = np.where(np.isfinite(by_events) & (by_events > 0), by_events, by_files)
    n_jobs = np.where(np.isfinite(jobs) & (jobs >= 1), np.ceil(jobs), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        shared = np.asarray(numbers.get("input_nevents", nan), float) / n_jobs
    given = column("nevents_per_job", np.nan)
    shared = np.where(np.isfinite(shared) & (shared > 0), shared, 1.0)
    return {
        "cores": column("corecount", 1.0),
        # unset: the input's events shared among the jobs (1 where unknown)
        "nevents": np.where(np.isnan(given), shared, given),
        "n_jobs": n_jobs,
    }


def value_allocation(
    dist: ValueDistribution, levels: ConformalLevels | None, alpha: float
) -> Allocation:
    from scoutless.allocation.values import ndtri

    if levels is None:
        z, covered = float(ndtri(1 - alpha)), 1 - alpha
    else:
        z = levels.z_at(alpha)
        covered = float(levels.coverage(z))
    value = dist.at_z(z)
    n = len(dist)
    return Allocation(value, np.full(n, covered), np.full(n, np.nan), np.full(n, np.nan))
