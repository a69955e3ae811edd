"""The value and cost policies as the service answers them.

``policy=value``: per target, the calibrated (1 - alpha) value of the task's value
distribution; ``policy=cost``: the value with the least expected cost at the site
(:mod:`scoutless.allocation`), for the targets a cost model prices (memory, cputime; the
others get their value allocation), and per task whether scouting is cheaper. Either way
the class reported is the one that holds the value, the class probabilities stay in the
answer, and ``p_sufficient`` is P(need <= value) under the answer's one distribution (the
classes' masses, the value model's shape inside a class: :mod:`scoutless.allocation.reconcile`),
so it never contradicts the class probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from scoutless.allocation.allocate import (
    Allocation,
    cost_allocation,
    selective,
    unseen_application,
    value_allocation,
)
from scoutless.allocation.bounds import answer_bounds
from scoutless.allocation.context import JobContext, job_context
from scoutless.allocation.costs import COSTS
from scoutless.allocation.site import SiteRules
from scoutless.allocation.values import ValueDistribution
from scoutless.config import Settings, get_settings
from scoutless.features.encoded import InspectedFeatures
from scoutless.models.predictor import PredictorLike


class ValuePolicyError(ValueError):
    """A value policy the served bundle cannot answer (e.g. a bundle without value models)."""


@dataclass(frozen=True)
class ValueAnswer:
    """The allocations of a request's tasks per target, the value distributions they were
    chosen from, and the scout choice (cost only)."""

    allocations: dict[str, Allocation]
    distributions: dict[str, ValueDistribution]
    scouting: list[dict[str, Any]] | None
    #: per target the alpha its value was chosen at (None: a cost allocation, no alpha)
    alphas: dict[str, float | None]


#: the settings the rules below were made from, and those rules
_RULES: tuple[Settings, SiteRules] | None = None


def _deciding_rules(settings: Settings) -> SiteRules:
    """The rules a decision assumes under ``settings``, made once per settings object
    (``get_settings`` keeps one): ~8 us a request otherwise."""
    global _RULES
    made = _RULES
    if made is None or made[0] is not settings:
        made = (settings, SiteRules.of(settings.replay).deciding(settings.allocation))
        _RULES = made
    return made[1]


def _allocations(
    predictor: PredictorLike,
    features: InspectedFeatures,
    targets: Sequence[str],
    policy: str,
    alpha: float,
) -> tuple[dict[str, Allocation], dict[str, ValueDistribution], JobContext]:
    settings = get_settings()
    for t in targets:
        if not predictor.has_values(t):
            raise ValuePolicyError(
                f"policy {policy!r}: bundle {predictor.version} has no value model for {t!r}; "
                "retrain it to serve values"
            )
    dists = predictor.value_distributions(features.encoded, targets)
    out = {}
    bounds = answer_bounds(settings)  # a job runs no longer than the site's longest queue
    wall = bounds.clamp("walltime", dists["walltime"].median()) if "walltime" in dists else None
    job = job_context(features.numbers, len(features.encoded), settings.panda, wall)
    rules = _deciding_rules(settings)
    for t, dist in dists.items():
        levels = predictor.value_levels(t)
        if policy == "cost" and t in COSTS:
            prices = settings.allocation.prices
            grid = settings.allocation.grid_points
            cap = settings.allocation.kill_cap(t)
            out[t] = cost_allocation(t, dist, levels, job, rules, prices, grid,
                                     max_kill_probability=cap)  # fmt: skip
        else:
            out[t] = value_allocation(dist, levels, alpha)
        # within what the site can allocate; the class and p_sufficient are read from this
        # value, the scout choice keeps the unbounded allocation's costs
        out[t] = replace(out[t], value=bounds.clamp(t, out[t].value))
    return out, dists, job


def value_answer(
    predictor: PredictorLike,
    features: InspectedFeatures,
    targets: Sequence[str],
    *,
    policy: str,
    alpha: float,
) -> ValueAnswer:
    """Per target the allocation; for ``cost``, per task the scout choice and its reason."""
    allocations, dists, job = _allocations(predictor, features, targets, policy, alpha)
    alphas = {t: None if policy == "cost" and t in COSTS else alpha for t in allocations}
    if policy != "cost":
        return ValueAnswer(allocations, dists, None, alphas)
    priced = {t: a for t, a in allocations.items() if t in COSTS}
    settings = get_settings().allocation
    unknown = unseen_application(features.unknown, settings.scout_unseen)
    choice = selective(priced, job, settings.prices, unknown)
    scouting = [
        {"scout": bool(s), "reason": r, "predict_cost": float(p), "scout_cost": float(c)}
        for s, r, p, c in zip(
            choice.scout, choice.reasons(), choice.predict_cost, choice.scout_cost, strict=True
        )
    ]
    return ValueAnswer(allocations, dists, scouting, alphas)
