"""Decision policies: from class probabilities to the class a scheduler allocates.

Each policy is one small type with ``choose(proba) -> classes``; policies that need data
are fitted on a held-out calibration set (probabilities + true classes) kept in the bundle,
so the service can re-fit them per request (e.g. for a requested alpha) in microseconds.

- ``ArgmaxPolicy``: the most probable class.
- ``SafePolicy``: move up to a larger class when P(that class or larger) >= tau; tau is the
  largest value at which the requested share of large tasks (upper half of the classes)
  is allocated enough on calibration.
- ``RiskPolicy``: the smallest class whose cumulative probability reaches a split-conformal
  threshold, so that P(true class > chosen class) <= alpha on exchangeable new data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from scoutless.policy_names import ALPHA_POLICIES, CLASS_POLICIES


def unused_alpha(policy: str, alpha: float | None) -> str | None:
    """Why ``alpha`` cannot be given with ``policy`` (None when it can): only the policies
    that promise an under-allocation rate read it, and a bound silently ignored misleads."""
    if alpha is None or policy in ALPHA_POLICIES:
        return None
    return (
        f"alpha={alpha} is read only by the policies {' and '.join(ALPHA_POLICIES)}; "
        f"policy {policy!r} ignores it (give policy=risk or value, or drop alpha)"
    )


class PolicyError(ValueError):
    """A policy that cannot be built from what it was given."""


class Policy(Protocol):
    name: str

    def choose(self, proba: np.ndarray) -> np.ndarray:
        """(n, K) probabilities -> (n,) class indices."""
        ...


@dataclass(frozen=True)
class ArgmaxPolicy:
    name: str = "argmax"

    def choose(self, proba: np.ndarray) -> np.ndarray:
        return np.asarray(proba).argmax(axis=1)


def large_class_start(n_classes: int) -> int:
    """First class counted as "large" by the safe policy: the upper half of the classes."""
    return max(1, n_classes // 2)


def _upper_tail(proba: np.ndarray) -> np.ndarray:
    """tail[:, c] = P(class >= c)."""
    return np.cumsum(np.asarray(proba)[:, ::-1], axis=1)[:, ::-1]


@dataclass(frozen=True)
class SafePolicy:
    """Argmax, then the largest class c above it with P(class >= c) >= tau."""

    tau: float
    name: str = "safe"

    def choose(self, proba: np.ndarray) -> np.ndarray:
        proba = np.asarray(proba)
        chosen = proba.argmax(axis=1)
        tail = _upper_tail(proba)
        n_classes = proba.shape[1]
        for c in range(1, n_classes):
            move = (tail[:, c] >= self.tau) & (chosen < c)
            chosen = np.where(move, c, chosen)
        return chosen

    @classmethod
    def fit(
        cls,
        cal_proba: np.ndarray,
        cal_y: np.ndarray,
        target_recall: float = 0.9,
        min_tau: float = 0.1,
    ) -> SafePolicy:
        """The largest tau at which large tasks get enough on calibration.

        "Recall of the large classes" is the share of tasks whose true class lies in the upper
        half (``y >= K // 2``) that are allocated at least their class. Measuring the upper
        half rather than the single top class keeps tau meaningful when the top class is
        rare; ``min_tau`` stops a hopeless target from moving nearly every task up.
        """
        if not 0 < target_recall <= 1:
            raise PolicyError(f"{target_recall=} must be in (0, 1]")
        if not 0 < min_tau <= 0.5:
            raise PolicyError(f"{min_tau=} must be in (0, 0.5]")
        cal_proba, cal_y = np.asarray(cal_proba), np.asarray(cal_y)
        is_large = cal_y >= large_class_start(cal_proba.shape[1])
        if not is_large.any():
            return cls(tau=0.5)
        for tau in np.linspace(0.5, min_tau, 41):
            chosen = cls(tau=float(tau)).choose(cal_proba[is_large])
            if (chosen >= cal_y[is_large]).mean() >= target_recall:
                return cls(tau=float(tau))
        return cls(tau=float(min_tau))


@dataclass(frozen=True)
class RiskPolicy:
    """Smallest class c with P(class <= c) >= threshold (split conformal, ordinal)."""

    threshold: float
    alpha: float
    name: str = "risk"

    def choose(self, proba: np.ndarray) -> np.ndarray:
        cdf = np.cumsum(np.asarray(proba), axis=1)
        reached = cdf >= self.threshold
        reached[:, -1] = True  # the largest class always covers
        return reached.argmax(axis=1)

    @classmethod
    def fit(cls, cal_proba: np.ndarray, cal_y: np.ndarray, alpha: float = 0.05) -> RiskPolicy:
        """Under-allocation happens iff P(class < y) >= threshold: calibrate that score.

        The score of a calibration row is s = P(class < y_true). Choosing threshold t just
        above the ceil((n + 1)(1 - alpha))-th smallest score gives P(s_new >= t) <= alpha
        for an exchangeable new row, i.e. under-allocation at most alpha.
        """
        if not 0 < alpha < 1:
            raise PolicyError(f"{alpha=} must be in (0, 1)")
        cal_proba, cal_y = np.asarray(cal_proba), np.asarray(cal_y, dtype=int)
        n = len(cal_y)
        if n == 0:
            raise PolicyError("risk policy needs a non-empty calibration set")
        cdf = np.cumsum(cal_proba, axis=1)
        below = np.where(cal_y > 0, cdf[np.arange(n), np.maximum(cal_y - 1, 0)], 0.0)
        rank = math.ceil((n + 1) * (1 - alpha))
        if rank > n:
            return cls(threshold=math.inf, alpha=alpha)  # too few rows: always the top class
        score = np.sort(below)[rank - 1]
        return cls(threshold=float(np.nextafter(score, math.inf)), alpha=alpha)


def make_policy(
    name: str,
    cal_proba: np.ndarray | None = None,
    cal_y: np.ndarray | None = None,
    *,
    alpha: float = 0.05,
    recall: float = 0.9,
) -> Policy:
    """Build a policy by name, fitting it on the calibration set when it needs one."""
    if name == "argmax":
        return ArgmaxPolicy()
    if cal_proba is None or cal_y is None:
        raise PolicyError(f"policy {name!r} needs calibration probabilities and classes")
    if name == "safe":
        return SafePolicy.fit(cal_proba, cal_y, recall)
    if name == "risk":
        return RiskPolicy.fit(cal_proba, cal_y, alpha)
    raise PolicyError(f"unknown policy {name!r}; expected one of {', '.join(CLASS_POLICIES)}")
