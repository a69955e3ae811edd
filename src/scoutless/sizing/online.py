"""The online sizer: instances of task types allocated in order from what was known before
each, every outcome learnt as it comes (a row of the type's `TypeHistory`; no model is
retrained from scratch — each location model is a closed form or a neighbour look-up over
the type's uncensored rows, evaluated when an instance is sized).

Per task type it keeps the outcomes and, for each location model of `models.CANDIDATES`
(the mean, a line in the log input size, the nearest neighbours in it, a line in bytes, a
line in the log cores), that model's out-of-sample residual of each (`type_history`):
leave-one-out, refitted whenever the type's samples are rebuilt (`refit_residuals`), so
the spread is the error of the model that sizes next, not of the one a type's first few
outcomes made. A model's need distribution for an instance is its location plus its
residuals (`need_sample`: runtime-weighted, weighted towards the rows of the nearest input
sizes, censored ones re-weighted, smoothed, mixed with the other types' shape). The
allocation and every retry are `distribution.plan`'s: the least expected cost, a retry on
the distribution conditional on the need exceeding the failed allocation. After each
outcome every model is charged what its plan would have cost on that instance (× its
runtime); the type sizes with the cheapest so far (its history's leave-one-out error
decides first).

A type with no history (sized cold) starts from instances borrowed from other workflows
until it has `own_replaces_borrowed` outcomes or one refutes them (`borrowed`), or — seen
nowhere — from the user's request times the other types' need/request ratios. The cores
enter through their own location model (within a Nextflow process they rarely vary; within
an ATLAS task a job's memory follows them): where they do not vary it is the mean. A type
holds at most `max_outcomes_per_type` outcomes (the oldest go).

Nothing here knows Nextflow: a task type is a key, an instance its features."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from scoutless.config import SizingSettings
from scoutless.sizing.borrowed import leaves_after, own_rows, refutes
from scoutless.sizing.distribution import FailurePrice, plan_sorted, ranked_median
from scoutless.sizing.features import Release
from scoutless.sizing.models import BY_NAME, CANDIDATES
from scoutless.sizing.need_sample import (
    Sample,
    anchored_residuals,
    pooled_prior,
    request_sample,
    residual_sample,
)
from scoutless.sizing.protocol import Outcome
from scoutless.sizing.type_history import TypeHistory

#: a retry grows the failed allocation by at least this factor
MIN_STEP = 1.01
#: the location models' names, in the order a tie is broken
MODELS: tuple[str, ...] = tuple(m.name for m in CANDIDATES)
#: attempts a shadow plan is followed for before it is given up
SHADOW_ATTEMPTS = 16


#: what is known of an instance at release (one type for every caller)
Features = Release


def _log(value: float) -> float:
    return float(np.log(value)) if np.isfinite(value) and value > 0 else np.nan


def _unknown(x: float) -> float:
    return np.nan


def location(state: TypeHistory, model: str, f: Features) -> float:
    """Where model ``model`` puts a type's log need for an instance (NaN: no pairs); the
    model is fitted once per outcome the type learns, however often it is asked."""
    version = (state.learnt, len(state.rows))
    hit = state.fits.get(model)
    feature = BY_NAME[model].feature
    if hit is None or hit[0] != version:
        xs, ys = state.pairs(feature)
        hit = state.fits[model] = (version, BY_NAME[model].fit(xs, ys) if len(ys) else _unknown)
    return hit[1](getattr(f, feature)())


def refit_residuals(state: TypeHistory) -> None:
    """Each model's residuals of the outcomes a type learnt that fitted, leave-one-out as
    the model now fitted to every pair makes them. A row learnt when its type held a
    handful of outcomes otherwise keeps the error of a model fitted on those few (the second
    outcome's residual is the first's distance from it), and the spread it widens lasts
    until the row is dropped. A prior's points (``TypeHistory.pseudo``, `OnlineSizer.start_type`'s
    ``pseudo``) keep their own fit's: a shape, how needs spread, not where they lie. A kill
    keeps its residual as learnt: a bound above the location of its time, which a location
    moved since (the jobs after it far below) does not make a larger claim of."""
    keep = ~state.censored()
    if keep.sum() < 2:
        return
    learnt = keep.copy()
    learnt[: state.pseudo] = False
    y = state.column("log_need")[keep]
    for model in CANDIDATES:
        col = state.residuals(model.name)  # a view: written in place
        col[learnt] = model.loo(state.column(model.feature)[keep], y)[learnt[keep]]


class OnlineSizer:
    """Online sizing over task types (see the module's docstring): the `Sizer` protocol's
    ``first`` / ``retry`` / ``learn``, a type's history up front (``start_type``), and
    each type's state as data (``snapshot`` / ``restore``)."""

    def __init__(
        self,
        settings: SizingSettings,
        *,
        failure_price: Callable[[Features], FailurePrice] | None = None,
        max_kill_probability: float | None = None,
    ):
        """``failure_price``: what a failed attempt of an instance costs (default: the
        protocol's, the allocation held plus a restart's overhead, `_failure`);
        ``max_kill_probability``: each attempt's P(need > allocation) at most this (None:
        no cap, the protocol's)."""
        self.settings = settings
        self.failure_price = failure_price
        self.max_kill_probability = max_kill_probability
        self.types: dict[Hashable, TypeHistory] = {}
        #: the instance being sized: (key, features, `_prepare`'s sample and price)
        self._current: tuple | None = None
        self._learnt = 0  # outcomes learnt, all types (each type's `learnt` summed)

    # ------------------------------------------------------------------ state
    def keys(self) -> list[Hashable]:
        """The task types the sizer holds state for, in the order first seen."""
        return list(self.types)

    def snapshot(self, key: Hashable) -> dict[str, Any]:
        """Type ``key``'s state as JSON-safe data (equal state, equal dict)."""
        return self.types[key].to_dict()

    def restore(self, key: Hashable, snapshot: dict[str, Any]) -> None:
        """Type ``key``'s state from a `snapshot`: sizing goes on as it would have."""
        self._install(key, TypeHistory.from_dict(snapshot, MODELS))
        self._current = None

    def forget(self, key: Hashable) -> None:
        """Drop type ``key``'s state (one that holds nothing a caller kept)."""
        old = self.types.pop(key, None)
        if old is not None:
            self._learnt -= old.learnt
        self._current = None

    def _install(self, key: Hashable, state: TypeHistory) -> None:
        old = self.types.get(key)
        self._learnt += state.learnt - (old.learnt if old else 0)
        self.types[key] = state

    def _state(self, key: Hashable) -> TypeHistory:
        if key not in self.types:
            self.start_type(key, [], [], [])
        return self.types[key]

    # ------------------------------------------------------------------ learning
    def start_type(
        self,
        key: Hashable,
        features: Sequence[Features],
        needs: Sequence[float],
        runtimes: Sequence[float],
        *,
        borrowed: bool = False,
        pseudo: bool = False,
    ) -> None:
        """A type's history (known before its first instance): its rows, leave-one-out
        residuals of every model, and the model with the least of them (the latest
        `max_outcomes_per_type` rows). ``borrowed``: instances of the same type in other
        workflows, used until the type has `own_replaces_borrowed` outcomes of its own;
        ``pseudo``: the rows are a model's answer, not outcomes (a prior's points), and
        their residuals stay their own fit's (`refit_residuals`)."""
        cap = self.settings.max_outcomes_per_type
        keep = slice(-cap, None) if cap else slice(None)
        log_need = np.log(np.asarray(needs, dtype=float))[keep]
        self._fit(key, {
            "log_input": np.array([f.log_input() for f in features])[keep],
            "log_need": log_need,
            "runtime": np.asarray(runtimes, dtype=float)[keep],
            "log_request": np.array([_log(f.request) for f in features])[keep],
            "log_cores": np.array([f.log_cores() for f in features])[keep],
        }, prior=None)  # fmt: skip
        self.types[key].borrowed = len(log_need) if borrowed else 0
        self.types[key].pseudo = len(log_need) if pseudo else 0

    def _fit(self, key: Hashable, rows: dict[str, np.ndarray], prior: tuple | None) -> None:
        """A type's state from uncensored rows alone: each model's residuals leave-one-out."""
        state = TypeHistory(MODELS, prior=prior)
        y = rows["log_need"]
        columns = dict(rows, censored=np.zeros(len(y)))
        for model in CANDIDATES:
            x = rows[model.feature]
            resid = model.loo(x, y) if len(y) > 1 else np.full(len(y), np.nan)
            columns[f"resid:{model.name}"] = resid
        state.rows.extend(columns)
        state.learnt = len(y)
        state.move_anchor(self.settings.max_outcomes_per_type)
        if len(y) > 1:
            errors = {m: float(np.mean(np.abs(columns[f"resid:{m}"]))) for m in MODELS}
            state.choice = min(errors, key=errors.get)
        self._install(key, state)

    def _drop_borrowed(self, key: Hashable, state: TypeHistory) -> None:
        """The borrowed instances leave (`borrowed`): the type refitted from its own."""
        self._fit(key, own_rows(state), prior=state.prior)

    def learn(self, key: Hashable, features: Features, outcome: Outcome) -> None:
        """An attempt's outcome: a need that fitted charges every model what its plan
        would have cost (the cheapest so far sizes the type's next instance); a kill is a
        censored row (the need lies above its bound)."""
        state = self._state(key)
        if not outcome.censored and self.settings.shadow_choice and state.n_pairs() > 1:
            self._charge_shadow(key, state, features, outcome)
        y = float(np.log(outcome.need))
        row = {
            "log_input": features.log_input(), "log_need": y, "runtime": float(outcome.runtime),
            "censored": float(outcome.censored), "log_request": _log(features.request),
            "log_cores": features.log_cores(),
        }  # fmt: skip
        for model in MODELS:  # NaN: no location yet (a type's first instance, cold)
            row[f"resid:{model}"] = y - location(state, model, features)
        state.add(row, self.settings.max_outcomes_per_type, self.settings.sample_refresh_share)
        self._learnt += 1
        if state.anchor_learnt == state.learnt and self.settings.residuals == "leave_one_out":
            refit_residuals(state)  # the samples are rebuilt: from the current models' errors
        if leaves_after(state, self.settings, y, bool(outcome.censored)):
            self._drop_borrowed(key, state)

    def _charge_shadow(
        self, key: Hashable, state: TypeHistory, f: Features, outcome: Outcome
    ) -> None:
        weight = float(outcome.runtime) if self.settings.shadow_runtime else 1.0
        for model in MODELS:
            state.shadow[model] += self._plan_cost(key, model, f, outcome.need) * weight
        state.choice = min(state.shadow, key=state.shadow.get)

    def _plan_cost(self, key: Hashable, model: str, f: Features, need: float) -> float:
        """What sizing this instance with ``model`` would have cost (per unit of runtime:
        the failed allocations, the excess of the one that fits, the penalties)."""
        ranked, weights, price = self._prepare(key, f, model)
        cost, failed = 0.0, -np.inf
        for _ in range(SHADOW_ATTEMPTS):
            a = self._next(ranked, weights, failed, key, price)
            if a >= need:
                return cost + a - need
            cost += price.holds * a + price.fixed
            failed = a
        return cost

    # ------------------------------------------------------------------ sizing
    def distribution(self, key: Hashable, f: Features, model: str | None = None) -> Sample:
        """An instance's need as a weighted sample (bytes, weights) under ``model``
        (default: the type's choice), in ascending order."""
        state = self._state(key)
        if not state.n_pairs():
            others = (s for k, s in self.types.items() if k != key)
            values, weights = request_sample(_log(f.request), others, self.settings)
            order = np.argsort(values, kind="stable")
            return values[order], weights[order]
        model = model or state.choice
        vals, w = self._sample(key, state, model, f.log_input())
        if not len(vals):
            return np.zeros(0), np.zeros(0)
        return np.exp(location(state, model, f) + vals), w

    def _prepare(
        self, key: Hashable, f: Features, model: str | None = None
    ) -> tuple[np.ndarray, np.ndarray, FailurePrice]:
        """What an instance's attempts are planned on: its need's sample (ascending) and
        weights under ``model``, and what a failed attempt costs."""
        ranked, weights = self.distribution(key, f, model)
        return ranked, weights, self._failure(f, ranked)

    def _sample(self, key: Hashable, state: TypeHistory, model: str, x: float) -> Sample:
        """A model's residual sample for an instance of log input size ``x``: kept until
        the type's anchor moves (`TypeHistory.add`), its prior is rebuilt or an instance
        of another input size comes (the same for every instance where nearness tells
        nothing: `need_sample.neighbourhood`)."""
        prior, others_scale = self._pooled(key, state)
        share = self.settings.neighbourhood_share
        where = x if share > 0 and np.isfinite(x) else None
        version = (state.anchor_learnt, state.prior[0], where)
        cached = state.samples.get(model)
        if cached is not None and cached[0] == version:
            return cached[1], cached[2]
        kept = state.samples.get(("base", model))  # the sorts every instance's sample shares
        if kept is None or kept[0] != state.anchor_learnt:
            kept = state.samples[("base", model)] = (
                state.anchor_learnt, anchored_residuals(state, model, self.settings))  # fmt: skip
        sample = residual_sample(state, model, prior, others_scale, self.settings, x, kept[1])
        state.samples[model] = (version, *sample)
        return sample

    def _pooled(self, key: Hashable, state: TypeHistory) -> tuple[np.ndarray, float | None]:
        """The type's prior (`need_sample.pooled_prior` of the other types), rebuilt once
        their outcomes have grown by more than `prior_refresh_share` since (in a walk of
        one type after another: never stale)."""
        others_seen = self._learnt - state.learnt
        share = self.settings.prior_refresh_share
        if state.prior is not None and others_seen - state.prior[0] <= share * state.prior[0]:
            return state.prior[1], state.prior[2]
        prior, scale = pooled_prior(s for k, s in self.types.items() if k != key)
        state.prior = (others_seen, prior, scale)
        return prior, scale

    def _failure(self, f: Features, ranked: np.ndarray) -> FailurePrice:
        """What a failed attempt costs: the caller's price, or the allocation held plus a
        restart's overhead (`failure_penalty` × the median need, at least the floor);
        ``ranked``: the need's sample in ascending order."""
        if self.failure_price is not None:
            price = self.failure_price(f)
            if price.per_median and len(ranked):  # a retry's overhead scales with the need
                return price.plus(price.per_median * ranked_median(ranked))
            return price
        if not len(ranked):
            return FailurePrice(0.0, 1.0)
        scale = max(ranked_median(ranked), self.settings.penalty_floor_bytes)
        return FailurePrice(self.settings.failure_penalty * scale, 1.0)

    def _next(self, ranked: np.ndarray, weights: np.ndarray, failed: float, key: Hashable,
              price: FailurePrice) -> float:  # fmt: skip
        """The plan's next attempt above ``failed`` (-inf: the first) on the need's sample
        (ascending), ``price`` what a failed attempt costs (one per instance: `_failure`)."""
        best = plan_sorted(ranked, weights, above=failed, grid=self.settings.grid_points,
                           tail_levels=self.settings.tail_levels, failure_cost=price.fixed, holds=price.holds,
                           max_fail_probability=self.max_kill_probability, grace=price.grace,
                           overuse=price.overuse)  # fmt: skip
        if best is not None:
            return max(best, failed * MIN_STEP) if np.isfinite(failed) else best
        ys = self._state(key).pairs()[1]
        seen = float(np.exp(ys.max())) if len(ys) else 0.0
        if not np.isfinite(failed):
            return seen if seen > 0 else np.nan
        if seen > failed:
            return seen
        return failed * self._growth(ranked, failed)

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

    def first(self, key: Hashable, features: Features) -> float:
        """The first attempt's allocation (NaN when the type has nothing to go on)."""
        prepared = self._prepare(key, features)
        self._current = (key, features, prepared)
        return self._next(*prepared[:2], -np.inf, key, prepared[2])

    def retry(self, key: Hashable, features: Features, failed: float) -> float:
        """The next attempt after one failed at ``failed``: the plan on the distribution
        conditional on need > failed; past everything it knows, the largest need seen
        when that is larger, else an exponential search (`_growth`). A kill past every
        borrowed need drops the borrowed instances first (`borrowed.refutes`)."""
        state = self._state(key)
        if refutes(state, self.settings, _log(failed), np.inf):  # past every borrowed need
            self._drop_borrowed(key, state)
            self._current = None
        if self._current is None or self._current[:2] != (key, features):
            self._current = (key, features, self._prepare(key, features))
        ranked, weights, price = self._current[2]
        return self._next(ranked, weights, failed, key, price)
