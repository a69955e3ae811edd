"""The decision a trace replay makes per target: the cost-aware value under the rules a
decision assumes, and the kill cap it keeps (the settings', at most the users' requests'
own kill share in the trace's history: what the operators accept today).

Beside ``replay/traces.py`` (the trace's workload and strategies), which asks it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scoutless.allocation.allocate import cost_allocation, grid_z, value_allocation
from scoutless.allocation.context import JobContext
from scoutless.allocation.costs import COSTS
from scoutless.allocation.site import SiteRules
from scoutless.allocation.values import ConformalLevels, ValueDistribution
from scoutless.config import Prices, Settings
from scoutless.replay.site_rules import WidthRules, rules_of
from scoutless.replay.submission import price_groups
from scoutless.sources.assemble import request_col
from scoutless.targets.spec import value_col


def numeric_column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A column as floats (NaN where missing or not a number; all NaN if absent)."""
    if name not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)


#: a trace's target -> the cost model that prices it
PRICED_AS = {"memory": "memory", "walltime": "cputime"}


def expected_cost(
    target: str,
    alloc: np.ndarray,
    dist: ValueDistribution,
    levels: ConformalLevels | None,
    job: JobContext,
    rules: SiteRules,
    prices: Prices,
    grid_points: int,
) -> np.ndarray:
    """(n,) expected cost per job of allocating ``alloc`` (one value per task), over the
    same calibrated grid as ``allocation.cost_allocation`` (its ``grid_z``: one grid for
    both; this function belongs beside it in allocation/allocate.py)."""
    needs = dist.grid_at_z(grid_z(grid_points, levels))
    price = COSTS[target].cost
    return price(np.asarray(alloc, float)[:, None, None], needs[:, None, :], job, rules, prices
                 ).mean(axis=2)[:, 0]  # fmt: skip


def kill_probability(
    dist: ValueDistribution, levels: ConformalLevels | None, alloc: np.ndarray
) -> np.ndarray:
    """(n,) the calibrated P(need > alloc) per job (the exact distribution's without levels;
    1 where there is no allocation)."""
    alloc = np.asarray(alloc, dtype=float)
    covered = dist.cdf(alloc) if levels is None else levels.coverage(dist.z_scores(alloc))
    return np.where(np.isfinite(alloc) & (alloc > 0), 1.0 - covered, 1.0)


def kill_cap(target: str, settings: Settings) -> float:
    """A trace target's kill cap from the settings: its own
    (``allocation.kill_probability_by_target``), else that of the cost model it is priced as."""
    alloc = settings.allocation
    return alloc.kill_probability_by_target.get(target, alloc.kill_cap(PRICED_AS[target]))


def incumbent_kill_share(history: pd.DataFrame | None, target: str) -> float | None:
    """How often the users' requests were too small in the trace's history (its training
    rows with both a need and a request): (kills + 1) / (rows + 2), so a history without
    a kill still allows some; None without such rows."""
    if history is None or not len(history):
        return None
    need, request = (
        numeric_column(history, value_col(target)),
        numeric_column(history, request_col(target)),
    )
    both = np.isfinite(need) & np.isfinite(request) & (request > 0)
    if not both.any():
        return None
    return float((np.sum(need[both] > request[both]) + 1) / (both.sum() + 2))


def trace_caps(history: pd.DataFrame | None, settings: Settings) -> dict[str, float]:
    """Per trace target, the kill cap its decisions keep: the settings' (:func:`kill_cap`),
    at most the incumbent's own kill share (``replay.trace_incumbent_cap``): the users'
    requests are what the operators accept today."""
    caps = {}
    for target in PRICED_AS:
        cap, share = kill_cap(target, settings), incumbent_kill_share(history, target)
        incumbent = share is not None and settings.replay.trace_incumbent_cap
        caps[target] = min(cap, share) if incumbent else cap
    return caps


def trace_decision(
    target: str, dist: ValueDistribution, levels: ConformalLevels | None, request: np.ndarray,
    job: JobContext, settings: Settings, rules: WidthRules, cap: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """One target's cost-aware value per job, its expected cost and the request's, under
    the rules a decision assumes (``replay.site_rules.decision_rules``: the grace the site
    guarantees, not the pilot's observed kill factor; the caps' loads), priced per resource
    type as the history's replay prices, and under the kill ``cap``: the value is at least
    the calibrated (1 − cap) value (÷ the guaranteed grace for memory), so a cap below the
    grid's resolution, 1 / (2 × ``grid_points``), is kept on the distribution itself; where
    the cap is the incumbent's own kill share, the user's request meets it, so that floor
    is never above the request."""
    alloc, priced = settings.allocation, PRICED_AS[target]
    value, cost, request_cost = (np.full(len(job), np.nan) for _ in range(3))
    floor = value_allocation(dist, levels, cap).value
    if priced == "memory":  # a need within the grace the site guarantees survives
        floor = floor / alloc.guaranteed_memory_grace
    if cap < kill_cap(target, settings):  # the incumbent's kill share: its request meets it
        floor = np.where(np.isfinite(request) & (request > 0), np.minimum(floor, request), floor)
    for name, at in price_groups(job.cores, settings.replay):
        width = rules_of(rules, settings.replay.resource_types[name].multicore)
        prices, part, jobs = alloc.prices_for(name), dist.take(at), job.take(at)
        grid = alloc.grid_points
        best = cost_allocation(priced, part, levels, jobs, width, prices, grid,
                               max_kill_probability=cap)  # fmt: skip
        value[at] = np.maximum(best.value, floor[at])
        raised = value[at] > best.value
        cost[at] = np.where(raised, expected_cost(priced, value[at], part, levels, jobs, width,
                                                  prices, grid), best.expected_cost)  # fmt: skip
        request_cost[at] = expected_cost(priced, request[at], part, levels, jobs, width, prices,
                                         grid)  # fmt: skip
    return value, cost, request_cost
