"""An instance's need as a weighted sample, and the allocation that minimises its expected
cost under the protocol's prices: an attempt that fits costs its excess × runtime, one
that fails costs its whole allocation × runtime and the retry, planned the same way on the
distribution conditional on the need exceeding it (a site without grace: kill factor 1).

Censored observations (an attempt killed below its need) enter as right-censored values:
`censored_weights` moves their weight onto the larger values (Kaplan–Meier), so the sample
estimates the uncensored distribution instead of the one biased low by dropping them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from scipy.stats import norm

from scoutless.allocation.quantiles import sample_quantiles


@dataclass(frozen=True)
class FailurePrice:
    """What a failed attempt costs, in the allocation's units (× runtime): ``fixed`` plus
    ``holds`` × the failed allocation. The peers' protocol: the allocation held for the
    run and a restart's overhead (holds 1); a PanDA site: the cores' time lost, whatever
    the allocation (holds 0; ``replay.traces``)."""

    fixed: float = 0.0
    holds: float = 1.0
    #: added to ``fixed``: this many times the need's median (a retry's overhead is the
    #: job's own run again, whatever the attempt that failed)
    per_median: float = 0.0
    #: the site kills only a need above this × the allocation (PanDA's pilot: the
    #: replay's ``memory_kill_factor``); 1: any need above it fails
    grace: float = 1.0
    #: a need above the allocation within ``grace`` runs on, each unit above it at this
    #: × a unit of slack's price (the memory it takes from other jobs)
    overuse: float = 0.0

    def plus(self, fixed: float) -> FailurePrice:
        """The price with ``fixed`` added to its fixed part (``per_median`` resolved)."""
        return FailurePrice(self.fixed + fixed, self.holds, grace=self.grace,
                            overuse=self.overuse)  # fmt: skip


def censored_weights(
    values: np.ndarray,
    censored: np.ndarray,
    weights: np.ndarray | None = None,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Kaplan–Meier weights: each censored value's weight goes to the larger values still
    at risk (ties: events before censorings); censored values end with weight 0. A censored
    value above every observed one keeps its weight (nothing known lies above it).
    ``order``: ``np.lexsort((censored, values))``, when the caller keeps it."""
    values = np.asarray(values, dtype=float)
    censored = np.asarray(censored, dtype=bool)
    w = np.ones(len(values)) if weights is None else np.asarray(weights, dtype=float).copy()
    if not censored.any():
        return w
    order = np.lexsort((censored, values)) if order is None else order
    cens, w_in_order = censored[order], w[order]
    # an observed (uncensored) value lies above position pos
    observed_above = np.concatenate((np.cumsum(~cens[::-1])[::-1][1:], [0])) > 0
    moves = cens & observed_above  # its weight goes to the values above it
    # the weight still at risk at each position, subtracted in order as a loop would
    remaining = np.subtract.accumulate(np.concatenate(([float(w.sum())], w_in_order)))[:-1]
    share = np.zeros(len(values))
    split = moves & (remaining > w_in_order)
    share[split] = w_in_order[split] / (remaining[split] - w_in_order[split])
    # how much each remaining unit of weight is scaled up, multiplied in order
    carry = np.multiply.accumulate(np.where(moves, 1.0 + share, 1.0))
    out = np.zeros(len(values))
    out[order] = np.where(moves, 0.0, w_in_order * carry)
    return out


@cache
def _kernel_nodes(nodes: int) -> np.ndarray:
    """The standard normal's ``nodes`` equal-mass points (read-only: shared)."""
    points = norm.ppf((np.arange(nodes) + 0.5) / nodes)
    points.setflags(write=False)
    return points


@cache
def grid_levels(grid: int, tail: int = 0) -> np.ndarray:
    """The levels of a plan's candidates (read-only: shared): ``grid`` evenly from 0 to 1,
    and ``tail`` more in the top step, at 1 − 2⁻ᵏ/(grid − 1) for k = 1 … ``tail``. An even
    grid's top step holds 1/(grid − 1) of the need (2 % at 48 points): an answer that
    should lie between its last two candidates (P98 and the largest value) would jump
    from one to the other, whatever a failure is priced at."""
    levels = np.linspace(0.0, 1.0, grid)
    if tail > 0 and grid > 1:
        top = 1.0 - 2.0 ** -np.arange(1, tail + 1) / (grid - 1)
        levels = np.unique(np.concatenate((levels, top)))
    levels.setflags(write=False)
    return levels


def smooth(values: np.ndarray, weights: np.ndarray, bandwidth: float, nodes: int) -> tuple:
    """Values spread by a Gaussian kernel of ``bandwidth`` (in the values' own scale) at
    ``nodes`` equal-mass nodes; weights split evenly."""
    if nodes <= 1 or bandwidth <= 0:
        return values, weights
    offsets = _kernel_nodes(nodes) * bandwidth
    spread = (values[:, None] + offsets[None, :]).ravel()
    return spread, np.repeat(weights / nodes, nodes)


def median(values: np.ndarray) -> float:
    """``np.median`` of finite values (the same partition and mean of the middle two),
    without its wrapper's cost: it runs several times an outcome."""
    n = len(values)
    half = n // 2
    if n % 2:
        return float(np.partition(values, half)[half])
    part = np.partition(values, (half - 1, half))
    return float((part[half - 1] + part[half]) / 2)


def ranked_median(ranked: np.ndarray) -> float:
    """``np.median`` of values already in ascending order."""
    half = len(ranked) // 2
    if len(ranked) % 2:
        return float(ranked[half])
    return float((ranked[half - 1] + ranked[half]) / 2)


def bandwidth(values: np.ndarray, weights: np.ndarray) -> float:
    """Silverman's rule on a weighted sample (robust spread, effective size)."""
    if len(values) < 2 or weights.sum() <= 0:
        return 0.0
    q25, q75 = sample_quantiles(values, weights, np.array([0.25, 0.75]))
    mean = np.average(values, weights=weights)
    sd = float(np.sqrt(np.average((values - mean) ** 2, weights=weights)))
    spread = min(sd, (q75 - q25) / 1.349) if q75 > q25 else sd
    n_eff = weights.sum() ** 2 / float((weights**2).sum())
    return 0.9 * spread * n_eff ** (-0.2)


def plan(values: np.ndarray, weights: np.ndarray, **how: Any) -> float | None:
    """`plan_sorted` of a sample in any order: the allocation minimising expected cost
    for a need distributed as the weighted ``values`` (``how``: its keywords)."""
    order = np.argsort(values, kind="stable")
    return plan_sorted(values[order], weights[order], **how)


def plan_sorted(
    ranked: np.ndarray,
    weights: np.ndarray,
    *,
    above: float = -np.inf,
    grid: int = 48,
    tail_levels: int = 0,
    failure_cost: float = 0.0,
    holds: float = 1.0,
    max_fail_probability: float | None = None,
    grace: float = 1.0,
    overuse: float = 0.0,
) -> float | None:
    """The allocation minimising expected cost for a need distributed as the weighted
    ``ranked`` (ascending, ``weights`` in that order), given that the need exceeds
    ``above``; None when no value does. A caller that plans on one sample again and again
    (an instance's retries, each candidate model's shadow plan) sorts it once.

    Candidates are the distribution's quantiles at ``grid`` levels and ``tail_levels``
    more in the top step (`grid_levels`; the largest value last). With masses cut at
    candidates c_1 < … < c_m, J(k) — the least expected cost given need > c_k — is min
    over q > k of c_q·P(need > c_k) − E[need; c_k < need ≤ c_q] + failure_cost·P(need >
    c_q) + J(q): an attempt at c_q that fits costs c_q − need,
    one that fails costs c_q and the plan from c_q on. The answer is J(0)'s argmin.
    ``holds`` scales the c_q a failure costs (0: only ``failure_cost``);
    ``max_fail_probability`` caps the answer's P(need > c_q | need > above) (a kill cap:
    a constraint on this attempt, not a price; the largest value always meets it).
    ``grace`` > 1: a site that kills only above that × the allocation, a need between
    running on at ``overuse`` × slack's price (`plan_kernel.best_allocation`). One
    compiled pass (`plan_kernel.plan_ranked`).
    """
    from scoutless.sizing.plan_kernel import plan_ranked  # numba: loaded when first used

    cap = np.nan if max_fail_probability is None else float(max_fail_probability)
    levels = grid_levels(grid, tail_levels)
    best = plan_ranked(ranked, weights, float(above), levels, float(holds),
                       float(failure_cost), cap, float(grace), float(overuse))  # fmt: skip
    return None if np.isnan(best) else float(best)
