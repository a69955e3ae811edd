"""The pipeline's decide stage: each target's classes under the request's policy, with
what the answer and the log show of them. The class policies (argmax, safe, risk) choose
from the classes' probabilities; the value and cost policies (:mod:`.value_decisions`)
choose each task's own value and the class holding it.

The stage lives on the pipeline itself (:class:`~scoutless.service.pipeline.Pipeline` is
one), as :class:`~scoutless.replay.tally.TaskTally` does on the replay: the hot path pays
no extra lookup.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Mapping
from typing import Any

import numpy as np

from scoutless.allocation.decider import SiteDecision
from scoutless.allocation.policies import Policy, PolicyError, make_policy
from scoutless.allocation.reconcile import sufficient_probabilities, sufficient_probability
from scoutless.config import Settings
from scoutless.fast_paths import current
from scoutless.features.encoded import InspectedFeatures
from scoutless.models.predictor import PredictorLike
from scoutless.policy_names import ALPHA_POLICIES
from scoutless.service.answers import BinsView, Decision
from scoutless.service.request_input import InputError
from scoutless.service.value_decisions import ValuePolicyError, value_answer


class PolicyCache:
    """Fitted policies per (target, name, alpha, recall); fitting needs the calibration set."""

    def __init__(self, predictor: PredictorLike) -> None:
        self.predictor = predictor
        self._fitted: dict[tuple[str, str, float, float], Policy] = {}
        self._lock = threading.Lock()

    def get(self, target: str, name: str, alpha: float, recall: float) -> Policy:
        key = (target, name, alpha, recall)
        policy = self._fitted.get(key)
        if policy is None:
            calibration = () if name == "argmax" else self.predictor.calibration(target)
            try:
                policy = make_policy(name, *calibration, alpha=alpha, recall=recall)
            except PolicyError as exc:
                raise InputError(["body", "policy"], f"{name!r} for {target}: {exc}") from exc
            with self._lock:
                self._fitted[key] = policy
        return policy


class DecisionStage:
    """Decide each target's classes; the pipeline's predictor and served targets are read."""

    predictor: PredictorLike
    targets: list[str]
    safe_recall: float

    def _decision_state(self, settings: Settings) -> None:
        """The fitted policies, each served target's bins as the decisions read them, and
        the value and cost policies' decision under ``settings``."""
        predictor = self.predictor
        self.policies = PolicyCache(predictor)
        self.site_decision = SiteDecision.of(settings, predictor.job_spreads,
                                             predictor.room_loads)  # fmt: skip
        bounds = self.site_decision.bounds  # what the site can allocate at all
        self._views = {t: BinsView.of(t, predictor.bins[t], bounds) for t in self.targets}
        self._edges = {t: np.asarray(predictor.bins[t].edges, dtype=float) for t in self.targets}
        self._inner = {t: edges[1:-1].tolist() for t, edges in self._edges.items()}

    def decide(
        self,
        proba: Mapping[str, np.ndarray],
        *,
        policy: str,
        alpha: float,
        features: InspectedFeatures | None = None,
    ) -> dict[str, Decision]:
        """Each target's chosen classes under the policy, with what answers and logs show.

        ``p_sufficient`` is P(class <= chosen): a class's recommended value is its upper
        edge; in the open last class it is a quantile of the class's training values, so
        there (given ``features`` and a value model) it is read from the answer's one
        distribution instead (:func:`_open_class_sufficient`)."""
        decisions: dict[str, Decision] = {}
        for target, p in proba.items():
            chosen = self.policies.get(target, policy, alpha, self.safe_recall).choose(p)
            probabilities, classes = p.tolist(), chosen.tolist()
            if len(p) > current().rows:
                confidence, p_sufficient = _chosen_readings(p, chosen)
            else:
                confidence, p_sufficient = _few_chosen_readings(probabilities, classes)
            if features is not None:
                self._open_class_sufficient(target, p, chosen, features, p_sufficient)
            decisions[target] = Decision(
                view=self._views[target], classes=classes, probabilities=probabilities,
                confidence=confidence, p_sufficient=p_sufficient,
                alpha=alpha if policy in ALPHA_POLICIES else None,  # risk's threshold
            )  # fmt: skip
        return decisions

    def _open_class_sufficient(
        self, target: str, p: np.ndarray, chosen: np.ndarray, features: InspectedFeatures,
        p_sufficient: list[float],
    ) -> None:  # fmt: skip
        """Where the open last class was chosen, P(need <= its recommended value) under the
        answer's one distribution (in place; nothing without a value model)."""
        bins = self.predictor.bins[target]
        top = np.flatnonzero(chosen == bins.n_classes - 1)
        if not len(top) or np.isfinite(bins.edges[-1]) or not self.predictor.has_values(target):
            return
        dist = self.predictor.value_distribution(features.encoded, target).take(top)
        value = np.full(len(top), self._views[target].recommended[-1])
        read = sufficient_probability(p[top], np.asarray(bins.edges), chosen[top], dist, value)
        for row, sufficient in zip(top.tolist(), read.tolist(), strict=True):
            p_sufficient[row] = sufficient

    def decide_values(
        self,
        proba: Mapping[str, np.ndarray],
        features: InspectedFeatures,
        *,
        policy: str,
        alpha: float,
    ) -> tuple[dict[str, Decision], list[dict[str, Any]] | None]:
        """The value or cost policy: per target each task's own value and the class holding
        it; for ``cost``, per task whether scouting is cheaper (:mod:`.value_decisions`)."""
        try:
            answer = value_answer(self.site_decision, self.predictor, features, list(proba),
                                  policy=policy, alpha=alpha)  # fmt: skip
        except ValuePolicyError as exc:
            raise InputError(["body", "policy"], str(exc)) from exc
        chosen, readings = {}, []
        for target, p in proba.items():
            allocation = answer.allocations[target]
            chosen[target] = _holding_class(self._inner[target], allocation.value)
            readings.append((p, self._edges[target], chosen[target],
                             answer.distributions[target], allocation.value))  # fmt: skip
        # one distribution: the classes' masses, the value model's shape inside (every
        # target's in one pass)
        sufficient = dict(zip(proba, sufficient_probabilities(readings), strict=True))
        decisions: dict[str, Decision] = {}
        for target, p in proba.items():
            probabilities, classes = p.tolist(), chosen[target].tolist()
            if len(p) > current().rows:
                confidence = p[np.arange(len(p)), chosen[target]].tolist()
            else:  # a few tasks: the same numbers from the lists
                confidence = [row[c] for row, c in zip(probabilities, classes, strict=True)]
            decisions[target] = Decision(
                view=self._views[target], classes=classes, probabilities=probabilities,
                confidence=confidence, p_sufficient=sufficient[target].tolist(),
                values=answer.allocations[target].value.tolist(),
                alpha=answer.alphas[target],
            )  # fmt: skip
        return decisions, answer.scouting


def _chosen_readings(p: np.ndarray, chosen: np.ndarray) -> tuple[list[float], list[float]]:
    """Per task the chosen class's probability and P(class <= chosen) clipped to [0, 1]:
    the definition, in numpy."""
    rows = np.arange(len(p))
    return p[rows, chosen].tolist(), np.cumsum(p, axis=1)[rows, chosen].clip(0, 1).tolist()


def _few_chosen_readings(
    probabilities: list[list[float]], classes: list[int]
) -> tuple[list[float], list[float]]:
    """:func:`_chosen_readings` of a few tasks, from the lists the answer holds anyway: a
    few tasks' numbers cost less in Python than numpy's calls and conversions. The sums
    run left to right, as ``np.cumsum``'s, so the floats are the same."""
    pairs = list(zip(probabilities, classes, strict=True))
    return [row[c] for row, c in pairs], [_cumulative(row, c) for row, c in pairs]


def _cumulative(row: list[float], c: int) -> float:
    """P(class <= c), summed left to right as ``np.cumsum`` does, clipped to [0, 1]."""
    total = 0.0
    for value in row[: c + 1]:
        total += value
    return min(max(total, 0.0), 1.0)


def _holding_class(inner: list[float], value: np.ndarray) -> np.ndarray:
    """(n,) the class holding each value (``inner`` the bins' inner edges), a few tasks'
    by :func:`_few_holding_class`."""
    if len(value) <= current().few_tasks:
        return _few_holding_class(inner, value)
    return _array_holding_class(inner, value)


def _array_holding_class(inner: list[float], value: np.ndarray) -> np.ndarray:
    """The definition, as ``np.maximum(bins.classify(value), 0)``: a missing or negative
    value in the first class."""
    classes = np.searchsorted(np.asarray(inner, dtype=float), value, side="left")
    classes = classes.astype(np.int64)
    classes[np.isnan(value) | (value < 0)] = 0
    return classes


def _few_holding_class(inner: list[float], value: np.ndarray) -> np.ndarray:
    """:func:`_array_holding_class` by ``bisect`` on the list, the same left search: a few
    values cost less this way than numpy's calls. NaN compares false: the first class, as
    a negative value."""
    return np.array(
        [bisect_left(inner, v) if v >= 0 else 0 for v in value.tolist()], dtype=np.int64
    )
