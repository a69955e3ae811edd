"""A task's value distribution and its split-conformal calibration.

Every value model (and the synthetic generator's truth) describes a task's value the same
way: ``offset + exp(N(mu, sigma))``, a shifted log-normal. ``offset`` is -1 for models
fitted on ``log1p`` of the value; the generator has its own per task.

Calibration is split-conformal on the standardised residual: on calibration rows the score
is ``z = (log(y - offset) - mu) / sigma`` (a monotone function of the row's own predicted
CDF at its true value, but without the CDF's saturation at 1 for a badly wrong model).
With the ``ceil((n + 1)(1 - alpha))``-th smallest score ``z*``, allocating
``offset + exp(mu + sigma z*)`` on an exchangeable new task under-allocates
(``y > allocation``) with probability at most alpha, whatever the model's errors: the
score is monotone in ``y`` for every task.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from scoutless.fast_paths import current

#: probability levels are kept inside (0, 1) so values stay finite; Z_CAP is the level
#: given when the calibration rows are too few for an alpha; a value at or below its
#: offset scores Z_FLOOR (below every real score)
_LEVEL_EPS = 1e-9
Z_CAP = 12.0
Z_FLOOR = -1e6


_SQRT1_2 = 0.7071067811865476
_STANDARD = NormalDist()


def ndtr(x: float | np.ndarray, *, size: int | None = None) -> np.ndarray:
    """Phi(x), the standard normal's CDF, element-wise (``scipy.special.ndtr``); computed as
    a call of ``size`` values would be (default: ``x.size``), so rows of several calls
    computed at once are each their own call's."""
    x = np.asarray(x, dtype=float)
    if (x.size if size is None else size) > current().scalar_values:
        from scipy.special import ndtr as scipy_ndtr

        return scipy_ndtr(x)
    return np.asarray([0.5 * math.erfc(-v * _SQRT1_2) for v in x.ravel().tolist()]).reshape(x.shape)


def ndtri(p: float | np.ndarray) -> np.ndarray:
    """Phi^-1(p), the standard normal's quantile, element-wise (``scipy.special.ndtri``:
    -inf at 0, inf at 1, NaN outside [0, 1])."""
    p = np.asarray(p, dtype=float)
    if p.size > current().scalar_values:
        from scipy.special import ndtri as scipy_ndtri

        return scipy_ndtri(p)
    return np.asarray([_quantile(v) for v in p.ravel().tolist()]).reshape(p.shape)


def _quantile(p: float) -> float:
    if 0 < p < 1:
        return _STANDARD.inv_cdf(p)
    return {0.0: -math.inf, 1.0: math.inf}.get(p, math.nan)


class CalibrationError(ValueError):
    """A calibration that cannot be fitted from what it was given."""


@dataclass(frozen=True)
class ValueDistribution:
    """Per task (arrays of one length): value = offset + exp(mu + sigma · Z), Z ~ N(0, 1)."""

    offset: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray

    @classmethod
    def of(cls, offset: object, mu: object, sigma: object) -> ValueDistribution:
        """Arrays broadcast to one length (a scalar offset is shared by every task); offset
        and sigma are copies (filled in place: ``broadcast_to`` is a Python-level call, and a
        served task makes four distributions)."""
        mu_a = np.asarray(mu, dtype=float)
        mu_a = mu_a.reshape(1) if mu_a.ndim == 0 else mu_a
        offset_a, sigma_a = np.empty(mu_a.shape), np.empty(mu_a.shape)
        offset_a[...] = np.asarray(offset, dtype=float)
        sigma_a[...] = np.asarray(sigma, dtype=float)
        return cls(offset_a, mu_a, np.maximum(sigma_a, 1e-9, out=sigma_a))

    def __len__(self) -> int:
        return len(self.mu)

    def take(self, rows: np.ndarray | slice) -> ValueDistribution:
        return ValueDistribution(self.offset[rows], self.mu[rows], self.sigma[rows])

    def quantile(self, level: float | np.ndarray) -> np.ndarray:
        """(n,) the value at probability ``level`` (a scalar, or one level per task)."""
        u = np.clip(np.asarray(level, dtype=float), _LEVEL_EPS, 1 - _LEVEL_EPS)
        return self.at_z(ndtri(u))

    def at_z(self, z: float | np.ndarray) -> np.ndarray:
        """(n,) the value ``z`` of the task's own standard deviations above its location."""
        return self.offset + np.exp(self.mu + self.sigma * np.asarray(z, dtype=float))

    def grid_at_z(self, z: np.ndarray) -> np.ndarray:
        """(n, m) the values at m standardised levels ``z``."""
        zs = np.asarray(z, dtype=float)[None, :]
        return self.offset[:, None] + np.exp(self.mu[:, None] + self.sigma[:, None] * zs)

    def z_scores(self, value: np.ndarray) -> np.ndarray:
        """(n,) the standardised residual of each task's ``value`` (Z_FLOOR at or below the
        offset), the conformal score: never clipped above, so a badly wrong model's scores
        keep their order (a clip would tie them and break the bound)."""
        above = np.asarray(value, dtype=float) - self.offset
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (np.log(np.where(above > 0, above, np.nan)) - self.mu) / self.sigma
        return np.nan_to_num(z, nan=Z_FLOOR, neginf=Z_FLOOR)

    def cdf(self, value: float | np.ndarray) -> np.ndarray:
        """(n,) P(task value <= value)."""
        above = np.asarray(value, dtype=float) - self.offset
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (np.log(np.where(above > 0, above, np.nan)) - self.mu) / self.sigma
        # NaN as -inf: np.where, not nan_to_num (Python-level checks on every served task)
        return np.where(above > 0, ndtr(np.where(np.isnan(z), -np.inf, z)), 0.0)

    def cdf_rows(self, values: np.ndarray, *, size: int | None = None) -> np.ndarray:
        """(k, n) :meth:`cdf` of each of k rows of n values, in one pass (equal to k
        calls: the same operations on each element); ``size``: the length of the calls
        the rows stand for (default n), which picks the normal CDF's code (:func:`ndtr`)."""
        above = np.asarray(values, dtype=float) - self.offset
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (np.log(np.where(above > 0, above, np.nan)) - self.mu) / self.sigma
        z = ndtr(np.where(np.isnan(z), -np.inf, z), size=size or above.shape[-1])
        return np.where(above > 0, z, 0.0)

    def median(self) -> np.ndarray:
        return self.offset + np.exp(self.mu)


@dataclass(frozen=True)
class ConformalLevels:
    """The calibration rows' sorted scores (standardised residuals); ``z_at(alpha)`` is the
    conformal level."""

    scores: np.ndarray  # sorted
    _memo: dict[Hashable, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def fit(cls, dist: ValueDistribution, values: np.ndarray) -> ConformalLevels:
        values = np.asarray(values, dtype=float)
        if len(values) != len(dist):
            raise CalibrationError(f"{len(values)} values for {len(dist)} distributions")
        known = np.isfinite(values)
        if not known.any():
            raise CalibrationError("value calibration needs rows with a known value")
        return cls(np.sort(dist.take(known).z_scores(values[known])))

    @property
    def n(self) -> int:
        return len(self.scores)

    def z_at(self, alpha: float) -> float:
        """The standardised level whose value under-allocates at most ``alpha`` (Z_CAP when
        the calibration rows are too few for that alpha: the most that can be given)."""
        if not 0 < alpha < 1:
            raise CalibrationError(f"{alpha=} must be in (0, 1)")
        rank = math.ceil((self.n + 1) * (1 - alpha))
        if rank > self.n:
            return Z_CAP
        return float(self.scores[rank - 1])

    def memo(self, key: Hashable, make: Callable[[], np.ndarray]) -> np.ndarray:
        """``make()`` made once per ``key`` for these scores, read-only: what depends only
        on them and the settings (the cost grid's levels every served task asks for)."""
        cached = self._memo.get(key)
        if cached is None:
            cached = np.asarray(make())
            cached.flags.writeable = False
            self._memo[key] = cached
        return cached

    def coverage(self, z: float | np.ndarray) -> np.ndarray:
        """P(need <= allocation) on a new task for an allocation at standardised level
        ``z``: the share of calibration scores at or below it, as conformal prediction
        counts it."""
        below = np.searchsorted(self.scores, np.asarray(z, dtype=float), side="right")
        return below / (self.n + 1)

    def to_dict(self) -> dict[str, list[float]]:
        return {"scores": self.scores.tolist()}


def spread_strata(points: int) -> tuple[np.ndarray, np.ndarray]:
    """(levels, weights) of ``points`` strata of a distribution: equal strata up to 0.9,
    then the tail in three narrowing ones (0.9-0.97, 0.97-0.995, 0.995-1) so a kill cap of
    a few percent sees the jobs that break it; each stratum is its middle level, weighted
    by its width. Fewer than four points: equal strata."""
    if points < 1:
        raise ValueError(f"{points=} must be positive")
    if points < 4:
        edges = np.linspace(0.0, 1.0, points + 1)
    else:
        edges = np.r_[np.linspace(0.0, 0.9, points - 2), 0.97, 0.995, 1.0]
    return (edges[:-1] + edges[1:]) / 2, np.diff(edges)


@dataclass(frozen=True)
class JobSpread:
    """Per task, ``s`` factors of one of its jobs' need over the task's value (n, s), with
    their probabilities (``weights``, (s,), summing to 1): a job of a task whose value is v
    needs v × factor. Learnt from a history's jobs (each job's own value over its task's,
    pooled by task kind: :meth:`pooled`); ``none``: every job needs the task's value."""

    factors: np.ndarray
    weights: np.ndarray

    @classmethod
    def none(cls, n: int) -> JobSpread:
        return cls(np.ones((n, 1)), np.ones(1))

    @classmethod
    def equal(cls, factors: np.ndarray) -> JobSpread:
        """Equally likely factors (n, s)."""
        factors = np.atleast_2d(np.asarray(factors, dtype=float))
        return cls(factors, np.full(factors.shape[1], 1.0 / factors.shape[1]))

    def __len__(self) -> int:
        return len(self.factors)

    def take(self, rows: np.ndarray | slice) -> JobSpread:
        return JobSpread(self.factors[rows], self.weights)

    @classmethod
    def pooled(
        cls,
        ratios: np.ndarray,
        job_kind: np.ndarray,
        task_kind: np.ndarray,
        points: int = 8,
        min_jobs: int = 50,
    ) -> JobSpread:
        """From jobs' ``ratios`` (a job's value ÷ its task's; NaN: not measured) and each
        job's and task's kind: a kind's ratios at ``points`` strata (:func:`spread_strata`;
        jobs weigh alike: the cost is per job); a kind with fewer than ``min_jobs``
        measured jobs takes every kind's."""
        levels, weights = spread_strata(points)
        ratios = np.asarray(ratios, dtype=float)
        ok = np.isfinite(ratios) & (ratios > 0)
        overall = np.quantile(ratios[ok], levels) if ok.any() else np.ones(points)
        factors = np.tile(overall, (len(task_kind), 1))
        job_kind, task_kind = np.asarray(job_kind), np.asarray(task_kind)
        for kind in np.unique(task_kind):
            mine = ok & (job_kind == kind)
            if mine.sum() >= min_jobs:
                factors[task_kind == kind] = np.quantile(ratios[mine], levels)
        return cls(factors, weights)
