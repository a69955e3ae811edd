"""From a task's value distribution to the number a scheduler allocates.

- ``value_allocation``: the calibrated (1 - alpha) value: under-allocates at most alpha
  (split-conformal, :class:`~scoutless.allocation.values.ConformalLevels`).
- ``cost_allocation``: the value with the least expected cost under the site's rules and
  prices (:mod:`scoutless.allocation.costs`), chosen among the task's calibrated quantiles.
- ``selective``: per task, whether scouting is cheaper than predicting: the jobs' expected
  cost at the cost-aware values against the scouts' wait (and always for a task whose
  categories the model has never seen).

The expectation runs over ``grid_points`` quantiles of the calibrated distribution, at
coverages ``(i + 0.5) / m``; the candidates are the same quantiles, so a task's choice
costs m × m evaluations of a closed-form cost (chunked: 100k tasks in well under 1 GB).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from scoutless.allocation.costs import COSTS, JobContext, SiteRules, scout_wait_cost
from scoutless.allocation.values import ConformalLevels, ValueDistribution
from scoutless.config import Prices

#: tasks priced together: (chunk, m, m) float64 intermediates stay near 75 MB at m = 48
_CHUNK = 4096


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


def coverage_grid(m: int) -> np.ndarray:
    """(m,) coverages ``(i + 0.5) / m``: equal-probability points of a distribution."""
    return (np.arange(m) + 0.5) / m


def z_grid(coverage: np.ndarray, levels: ConformalLevels | None) -> np.ndarray:
    """The standardised levels that hold the given calibrated coverages (the normal's own
    when the distribution is exact, e.g. the generator's truth)."""
    if levels is None:
        return ndtri(coverage)
    return np.quantile(levels.scores, coverage)


def _scout_errors(sigma: float, points: int = 8) -> np.ndarray:
    """(points,) equally likely factors exp(N(0, sigma)) of the scouts' measurement."""
    return np.exp(sigma * ndtri(coverage_grid(points)))


def value_allocation(
    dist: ValueDistribution, levels: ConformalLevels | None, alpha: float
) -> Allocation:
    """The calibrated (1 - alpha) quantile of every task."""
    if levels is None:
        z, covered = float(ndtri(1 - alpha)), 1 - alpha
    else:
        z = levels.z_at(alpha)
        covered = float(levels.coverage(z))
    value = dist.at_z(z)
    n = len(dist)
    return Allocation(value, np.full(n, covered), np.full(n, np.nan), np.full(n, np.nan))


def cost_allocation(
    target: str,
    dist: ValueDistribution,
    levels: ConformalLevels | None,
    job: JobContext,
    rules: SiteRules,
    prices: Prices,
    grid_points: int = 48,
) -> Allocation:
    """Per task, the calibrated quantile with the least expected cost per job."""
    if target not in COSTS:
        raise ValueError(f"no cost model for target {target!r}; priced: {', '.join(COSTS)}")
    price, candidates_of = COSTS[target]
    zs = z_grid(coverage_grid(grid_points), levels)
    out = {k: np.empty(len(dist)) for k in ("value", "covered", "cost", "scouted")}
    for lo in range(0, len(dist), _CHUNK):
        rows = slice(lo, lo + _CHUNK)
        needs = dist.take(rows).grid_at_z(zs)  # (c, m) equally likely needs
        chunk_job = job.take(rows)
        candidates = candidates_of(needs, rules)  # (c, k)
        expected = price(candidates[:, :, None], needs[:, None, :], chunk_job, rules, prices)
        expected = expected.mean(axis=2)  # (c, k)
        # ties (e.g. every value below the slot's own share costs the same): the largest
        order = np.argsort(candidates, axis=1, kind="stable")[:, ::-1]
        by_size = np.take_along_axis(expected, order, axis=1)
        tied = by_size <= by_size.min(axis=1, keepdims=True) * (1 + 1e-9) + 1e-12
        best = order[np.arange(len(order)), tied.argmax(axis=1)]
        chosen = candidates[np.arange(len(best)), best]
        out["value"][rows] = chosen
        out["covered"][rows] = (needs <= chosen[:, None]).mean(axis=1)
        out["cost"][rows] = expected[np.arange(len(best)), best]
        measured = needs[:, :, None] * _scout_errors(prices.scout_error_sigma)[None, None, :]
        scouted = price(measured, needs[:, :, None], chunk_job, rules, prices)
        out["scouted"][rows] = scouted.mean(axis=(1, 2))
    return Allocation(out["value"], out["covered"], out["cost"], out["scouted"])


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
    predict = n_jobs * sum(np.nan_to_num(a.expected_cost) for a in allocations.values())
    scouted = n_jobs * sum(np.nan_to_num(a.scouted_cost) for a in allocations.values())
    scouting = scout_wait_cost(job, prices) + scouted
    unseen = np.zeros(len(job), bool) if unknown is None else np.asarray(unknown, bool)
    return ScoutChoice(unseen | (predict > scouting), np.asarray(predict, float), scouting, unseen)
