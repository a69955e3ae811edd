"""The online sizing engine: instances of task types allocated in order from what was
known before each, every outcome learnt as it comes (appended to the type's state; no
model is retrained from scratch — each location model is a closed form or a neighbour
look-up over the type's pairs, evaluated when an instance is sized).

Per task type it keeps the observed (log input size, log need) pairs and, for each
location model of `models.CANDIDATES` (the mean, a line in the log input size, the
nearest neighbours in it, a line in bytes), that model's out-of-sample residuals — each with its instance's runtime
and whether it was censored (an attempt killed below its need: a lower bound). A
candidate's need distribution for an instance is its location plus its residuals —
runtime-weighted, censored ones re-weighted (Kaplan–Meier), smoothed by a Gaussian kernel
and mixed with the residual shape of the other task types (standardised, worth
`prior_weight` instances: what a type with ten instances cannot know of its own tail it
borrows from the types before). The allocation and every retry are `distribution.plan`'s:
the least expected cost, a retry on the distribution conditional on the need exceeding
the failed allocation. After each outcome every candidate is charged what its plan would
have cost on that instance (× its runtime); the type sizes with the cheapest so far (its
history's leave-one-out error decides first).

A type with no history (sized cold) starts from instances borrowed from other workflows
until it has `own_replaces_borrowed` outcomes, or — seen nowhere — from the user's request
times the other types' need/request ratios. The cores are carried with an instance but
not modelled yet (within a Nextflow process they rarely vary).

Nothing here knows Nextflow: a task type is a key, an instance its features."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from scoutless.allocation.quantiles import sample_quantiles
from scoutless.config import SizingSettings, get_settings
from scoutless.sizing.distribution import (
    FailurePrice,
    bandwidth,
    censored_weights,
    plan,
    smooth,
)  # fmt: skip
from scoutless.sizing.features import Release
from scoutless.sizing.models import CANDIDATES

#: the least residual spread (log scale) a type is standardised with
MIN_SCALE = 0.01
#: a borrowed standardised residual is held within ± this many scales (a type whose
#: needs sit on a plateau has a tiny scale and outliers hundreds of scales out)
PRIOR_Z = 8.0
#: a retry grows the failed allocation by at least this factor
MIN_STEP = 1.01
#: fewer residuals of its own: a type's spread is taken from the other types
MIN_OWN = 3
#: points a residual sample is compressed to (weighted quantiles) before smoothing
SAMPLE_POINTS = 256


#: what is known of an instance at release (one type for every caller)
Features = Release


@dataclass
class TypeState:
    """One task type's running state (see the module's docstring)."""

    xs: list[float] = field(default_factory=list)
    ys: list[float] = field(default_factory=list)
    log_request: list[float] = field(default_factory=list)  # beside ys (NaN: none)
    resid: dict[str, list[float]] = field(default_factory=dict)
    censored: list[bool] = field(default_factory=list)
    runtime: list[float] = field(default_factory=list)
    shadow: dict[str, float] = field(default_factory=dict)
    borrowed: int = 0  # leading instances taken from other workflows (cold start)
    choice: str = CANDIDATES[0].name
    #: the lists above as arrays, extended by what was appended since (name -> buffer, filled)
    arrays: dict[str, tuple[np.ndarray, int]] = field(default_factory=dict, repr=False)
    #: per candidate, its residual sample as last built: (outcomes, prior version, values, weights)
    samples: dict[str, tuple] = field(default_factory=dict, repr=False)

    def array(self, name: str, dtype: type = float) -> np.ndarray:
        """One of the state's append-only lists (``xs``, ``censored``, ``resid:<model>``
        …) as an array: a buffer kept between calls, grown by what was appended since
        (amortised O(1) an outcome, not a copy of the whole history a call)."""
        values = self.resid[name[6:]] if name.startswith("resid:") else getattr(self, name)
        n = len(values)
        buf, filled = self.arrays.get(name, (np.empty(0, dtype), 0))
        if n > len(buf):
            grown = np.empty(max(2 * len(buf), n, 64), dtype)
            grown[:filled] = buf[:filled]
            buf = grown
        if n > filled:
            buf[filled:n] = values[filled:n]
        self.arrays[name] = (buf, n)
        return buf[:n]

    def location(self, name: str, x: float) -> float:
        model = next(m for m in CANDIDATES if m.name == name)
        return model.predict(self.array("xs"), self.array("ys"), x)


def standardise(resid: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Residuals as (r − median) / scale, with the median and the robust scale (MAD)."""
    if not len(resid):
        return resid, 0.0, MIN_SCALE
    med = float(np.median(resid))
    scale = max(1.4826 * float(np.median(np.abs(resid - med))), MIN_SCALE)
    return (resid - med) / scale, med, scale


def compress(values: np.ndarray, weights: np.ndarray, points: int) -> tuple:
    """A weighted sample as at most ``points`` equal-weight quantiles (same total weight)."""
    if len(values) <= points:
        return values, weights
    levels = (np.arange(points) + 0.5) / points
    return sample_quantiles(values, weights, levels), np.full(points, weights.sum() / points)


def _log(value: float) -> float:
    return float(np.log(value)) if np.isfinite(value) and value > 0 else np.nan


def _observed(state: TypeState) -> np.ndarray:
    """A type's finite, uncensored residuals of its chosen candidate."""
    r = state.array("resid:" + state.choice)
    return r[np.isfinite(r) & ~state.array("censored", bool)]


class Engine:
    """Online sizing over task types (see the module's docstring)."""

    def __init__(
        self,
        settings: SizingSettings | None = None,
        *,
        failure_price: Callable[[Features], FailurePrice] | None = None,
        max_kill_probability: float | None = None,
    ):
        """``failure_price``: what a failed attempt of an instance costs (default: the
        protocol's, the allocation held plus `_penalty`); ``max_kill_probability``: each
        attempt's P(need > allocation) at most this (None: no cap, the protocol's)."""
        self.settings = settings or get_settings().sizing
        self.failure_price = failure_price
        self.max_kill_probability = max_kill_probability
        self.types: dict[Hashable, TypeState] = {}
        self._current: tuple | None = None  # (key, features, values, weights) being sized
        self._observed = 0  # outcomes learnt, all types
        #: key -> (others' outcomes, their pooled z, their median scale): `_pooled`
        self._priors: dict[Hashable, tuple[int, np.ndarray, float | None]] = {}

    # ------------------------------------------------------------------ learning
    def start_type(
        self,
        key: Hashable,
        features: Sequence[Features],
        needs: Sequence[float],
        runtimes: Sequence[float],
        *,
        borrowed: bool = False,
    ) -> None:
        """A type's history (known before its first instance): pairs, leave-one-out
        residuals of every candidate, and the candidate with the least of them.
        ``borrowed``: instances of the same type in other workflows, used until the type
        has `own_replaces_borrowed` outcomes of its own."""
        self._install(
            key, [f.log_input() for f in features], list(np.log(np.asarray(needs, dtype=float))),
            [_log(f.request) for f in features], list(map(float, runtimes)),
        )  # fmt: skip
        self.types[key].borrowed = len(needs) if borrowed else 0

    def _install(self, key: Hashable, xs: list, ys: list, log_request: list, rt: list) -> None:
        state = TypeState(xs=xs, ys=ys, log_request=log_request, runtime=rt)
        x, y = np.asarray(xs), np.asarray(ys)
        for model in CANDIDATES:
            state.resid[model.name] = list(model.loo(x, y)) if len(y) > 1 else [np.nan] * len(y)
            state.shadow[model.name] = 0.0
        state.censored = [False] * len(ys)
        if len(y) > 1:
            errors = {m.name: float(np.mean(np.abs(state.resid[m.name]))) for m in CANDIDATES}
            state.choice = min(errors, key=errors.get)
        old = self.types.get(key)
        self._observed += len(state.censored) - (len(old.censored) if old else 0)
        self.types[key] = state

    def _drop_borrowed(self, key: Hashable, state: TypeState) -> None:
        """Enough outcomes of its own: the type forgets the borrowed instances (its own
        kills, if any, are forgotten with them: they stay out of the refit pairs)."""
        n = state.borrowed
        own = [i for i in range(len(state.censored)) if i >= n and not state.censored[i]]
        k = len(state.ys) - n
        self._install(
            key, state.xs[-k:], state.ys[-k:], state.log_request[-k:],
            [state.runtime[i] for i in own],
        )  # fmt: skip

    def observe(self, key: Hashable, f: Features, need: float, runtime: float) -> None:
        """An instance's need, known after it fitted: every candidate's residual and what
        its plan would have cost; the cheapest so far sizes the type's next instance."""
        state = self._state(key)
        x, y = f.log_input(), float(np.log(need))
        if self.settings.shadow_choice and len(state.ys) > 1:
            for model in CANDIDATES:
                cost = self._plan_cost(key, model.name, f, need)
                state.shadow[model.name] += cost * (
                    float(runtime) if self.settings.shadow_runtime else 1.0
                )
            state.choice = min(state.shadow, key=state.shadow.get)
        for model in CANDIDATES:  # NaN: no location yet (a type's first instance, cold)
            loc = state.location(model.name, x) if state.ys else np.nan
            state.resid[model.name].append(y - loc)
        state.censored.append(False)
        state.runtime.append(float(runtime))
        self._observed += 1
        state.xs.append(x)
        state.ys.append(y)
        state.log_request.append(_log(f.request))
        if state.borrowed and len(state.ys) - state.borrowed >= self.settings.own_replaces_borrowed:
            self._drop_borrowed(key, state)

    def observe_kill(self, key: Hashable, f: Features, bound: float, runtime: float) -> None:
        """An attempt killed at ``bound``: the need lies above it (a censored residual)."""
        state = self._state(key)
        for model in CANDIDATES:
            loc = state.location(model.name, f.log_input()) if state.ys else np.nan
            state.resid[model.name].append(float(np.log(bound)) - loc)
        state.censored.append(True)
        state.runtime.append(float(runtime))
        self._observed += 1

    def _state(self, key: Hashable) -> TypeState:
        if key not in self.types:
            self.start_type(key, [], [], [])
        return self.types[key]

    def _plan_cost(self, key: Hashable, name: str, f: Features, need: float) -> float:
        """What sizing this instance with candidate ``name`` would have cost (per unit of
        runtime: the failed allocations, the excess of the one that fits, the penalties)."""
        values, weights = self.distribution(key, f, name)
        price = self._failure(f, values)
        cost, failed = 0.0, -np.inf
        for _ in range(16):
            a = self._next(values, weights, failed, key, f)
            if a >= need:
                return cost + a - need
            cost += price.holds * a + price.fixed
            failed = a
        return cost

    # ------------------------------------------------------------------ sizing
    def distribution(
        self, key: Hashable, f: Features, name: str | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """An instance's need as a weighted sample (bytes, weights) under candidate
        ``name`` (default: the type's choice)."""
        state = self._state(key)
        if not state.ys:
            return self._from_request(key, f)
        name = name or state.choice
        vals, w = self._sample(key, state, name)
        if not len(vals):
            return np.zeros(0), np.zeros(0)
        return np.exp(state.location(name, f.log_input()) + vals), w

    def _sample(self, key: Hashable, state: TypeState, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Candidate ``name``'s residuals (log scale) as a smoothed weighted sample with the
        other types' shape mixed in: the same for every instance of the type, so it is kept
        until the type learns an outcome or its prior is rebuilt."""
        prior, others_scale = self._pooled(key)
        version = (len(state.censored), self._priors[key][0])
        cached = state.samples.get(name)
        if cached is not None and cached[0] == version:
            return cached[1], cached[2]
        resid = state.array("resid:" + name)
        known = np.isfinite(resid)
        resid, cens = resid[known], state.array("censored", bool)[known]
        rt = state.array("runtime")[known]
        use_rt = self.settings.runtime_weighted and len(rt) and rt.mean() > 0
        w = censored_weights(resid, cens, rt / rt.mean() if use_rt else None)
        _, med, scale = standardise(resid[~cens])
        if (~cens).sum() < MIN_OWN and others_scale is not None:  # a type sized cold
            scale = others_scale
        resid, w = compress(resid, w, SAMPLE_POINTS)
        if len(prior) and self.settings.prior_weight > 0:
            resid = np.concatenate((resid, med + prior * scale))
            w = np.concatenate((w, np.full(len(prior), self.settings.prior_weight / len(prior))))
        sample = (np.zeros(0), np.zeros(0))
        if len(resid) and w.sum() > 0:
            sample = smooth(resid, w, bandwidth(resid, w), self.settings.kernel_nodes)
        state.samples[name] = (version, *sample)
        return sample

    def _from_request(self, key: Hashable, f: Features) -> tuple[np.ndarray, np.ndarray]:
        """A type never seen: the user's request times how need related to request in
        the other types (log need − log request over their instances); none without a
        request."""
        log_req = _log(f.request)
        ratios = [
            s.array("ys") - s.array("log_request")
            for k, s in self.types.items() if k != key and len(s.ys)
        ]  # fmt: skip
        ratios = np.concatenate(ratios) if ratios else np.zeros(0)
        ratios = ratios[np.isfinite(ratios)]
        if not np.isfinite(log_req) or not len(ratios):
            return np.zeros(0), np.zeros(0)
        vals, w = compress(ratios, np.ones(len(ratios)), SAMPLE_POINTS)
        vals, w = smooth(vals, w, bandwidth(vals, w), self.settings.kernel_nodes)
        return np.exp(log_req + vals), w

    def _pooled(self, key: Hashable) -> tuple[np.ndarray, float | None]:
        """The other types' standardised residuals (each one's chosen candidate's, the
        prior), and the median of their scales (a type sized cold with fewer than `MIN_OWN`
        residuals of its own is standardised with it; None: no other type has them).
        Rebuilt once the other types' outcomes have grown by more than
        `prior_refresh_share` since (in a walk of one type after another: never stale)."""
        others_seen = self._observed - len(self._state(key).censored)
        cached = self._priors.get(key)
        share = self.settings.prior_refresh_share
        if cached is not None and others_seen - cached[0] <= share * cached[0]:
            return cached[1], cached[2]
        parts = [
            standardise(_observed(s))
            for k, s in self.types.items() if k != key and len(s.ys) > MIN_OWN
        ]  # fmt: skip
        prior, scale = np.zeros(0), None
        if parts:
            pooled = np.clip(np.concatenate([z for z, _, _ in parts]), -PRIOR_Z, PRIOR_Z)
            prior = compress(pooled, np.ones(len(pooled)), SAMPLE_POINTS)[0]
            scale = float(np.median([sc for _, _, sc in parts]))
        self._priors[key] = (others_seen, prior, scale)
        return prior, scale

    def _penalty(self, values: np.ndarray) -> float:
        if not len(values):
            return 0.0
        scale = max(float(np.median(values)), self.settings.penalty_floor_bytes)
        return self.settings.failure_penalty * scale

    def _failure(self, f: Features, values: np.ndarray) -> FailurePrice:
        if self.failure_price is not None:
            price = self.failure_price(f)
            if price.per_median and len(values):  # a retry's overhead scales with the need
                return price.plus(price.per_median * float(np.median(values)))
            return price
        return FailurePrice(self._penalty(values), 1.0)

    def _next(
        self, values: np.ndarray, weights: np.ndarray, failed: float, key: Hashable, f: Features
    ) -> float:
        price = self._failure(f, values)
        best = plan(values, weights, above=failed, grid=self.settings.grid_points,
                    failure_cost=price.fixed, holds=price.holds,
                    max_fail_probability=self.max_kill_probability)  # fmt: skip
        if best is not None:
            return max(best, failed * MIN_STEP) if np.isfinite(failed) else best
        state = self._state(key)
        seen = float(np.exp(max(state.ys))) if state.ys else 0.0
        if not np.isfinite(failed):
            return seen if seen > 0 else np.nan
        if seen > failed:
            return seen
        return failed * self._growth(values, failed)

    def _growth(self, values: np.ndarray, failed: float) -> float:
        """Past everything the distribution holds: an exponential search, the first step
        the distribution's spread (at least 5 %), each next step's exponent doubled, at most
        `fallback_growth`; the steps taken so far are read off how far ``failed`` lies past
        the distribution's top."""
        spread = max(float(np.std(np.log(values))) if len(values) > 1 else 0.0, 0.05)
        top = float(values.max()) if len(values) else failed
        past = np.log(max(failed, top) / top) / spread  # 0, 1, 3, 7 … after 0, 1, 2, 3 steps
        steps = int(np.floor(np.log2(past + 1.0) + 1e-9))
        return float(min(np.exp(spread * 2.0**steps), self.settings.fallback_growth))

    def allocate(self, key: Hashable, f: Features) -> float:
        """The first attempt's allocation (NaN when the type has nothing to go on)."""
        values, weights = self.distribution(key, f)
        self._current = (key, f, values, weights)
        return self._next(values, weights, -np.inf, key, f)

    def retry(self, key: Hashable, f: Features, failed: float) -> float:
        """The next attempt after one failed at ``failed``: the plan on the distribution
        conditional on need > failed; past everything it knows, the largest need seen
        when that is larger, else an exponential search (`_growth`)."""
        if self._current is None or self._current[:2] != (key, f):
            self._current = (key, f, *self.distribution(key, f))
        return self._next(self._current[2], self._current[3], failed, key, f)
