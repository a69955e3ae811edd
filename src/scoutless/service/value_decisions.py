"""The value and cost policies as the service answers them.

Both are one call of the site's decision (:class:`~scoutless.allocation.decider.SiteDecision`,
built once per served bundle; the replay's strategies call the same one), fed the bundle's
value distributions and the tasks' submission features. ``policy=value``: per target, the calibrated (1 - alpha) value of the task's value
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
from dataclasses import dataclass
from typing import Any

from scoutless.allocation.allocate import Allocation, unseen_application
from scoutless.allocation.costs import COSTS
from scoutless.allocation.decider import SiteDecision
from scoutless.allocation.spread_table import KIND_FEATURE
from scoutless.allocation.values import ValueDistribution
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


def value_answer(
    decision: SiteDecision,
    predictor: PredictorLike,
    features: InspectedFeatures,
    targets: Sequence[str],
    *,
    policy: str,
    alpha: float,
) -> ValueAnswer:
    """Per target the allocation ``decision`` makes from the bundle's value distributions
    and the tasks' submission features; for ``cost``, per task the scout choice and its
    reason."""
    for t in targets:
        if not predictor.has_values(t):
            raise ValuePolicyError(
                f"policy {policy!r}: bundle {predictor.version} has no value model for {t!r}; "
                "retrain it to serve values"
            )
    dists = predictor.value_distributions(features.encoded, targets)
    levels = {t: predictor.value_levels(t) for t in dists}
    job = decision.job(features.numbers, len(features.encoded), dists)
    kinds = features.categories.get(KIND_FEATURE) if decision.spreads is not None else None
    allocations = decision.allocate(dists, levels, job, policy=policy, alpha=alpha, kinds=kinds)
    alphas = {t: None if policy == "cost" and t in COSTS else alpha for t in allocations}
    if policy != "cost":
        return ValueAnswer(allocations, dists, None, alphas)
    unknown = unseen_application(features.unknown, decision.allocation.scout_unseen)
    choice = decision.scouting(allocations, job, unknown)
    scouting = [
        {"scout": bool(s), "reason": r, "predict_cost": float(p), "scout_cost": float(c)}
        for s, r, p, c in zip(
            choice.scout, choice.reasons(), choice.predict_cost, choice.scout_cost, strict=True
        )
    ]
    return ValueAnswer(allocations, dists, scouting, alphas)
