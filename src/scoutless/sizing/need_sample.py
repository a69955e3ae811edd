"""An instance's need as a weighted sample, from what the online sizer keeps: a location
model's residuals of a type — runtime-weighted, weighted towards the rows whose input size
lies nearest the instance's (a need's spread differs along it: a tool's memory climbs
with small inputs and sits on a plateau under large ones), censored ones re-weighted
(Kaplan–Meier), compressed to quantiles and smoothed by a Gaussian kernel — mixed with the
residual shape of the other types (standardised, worth `prior_weight` instances: what a
type with ten instances cannot know of its own tail it borrows from the types before); for
a type never seen, the user's request times the other types' need/request ratios."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from scoutless.allocation.quantiles import ranked_quantiles, sample_quantiles
from scoutless.config import SizingSettings
from scoutless.sizing.distribution import bandwidth, censored_weights, median, smooth
from scoutless.sizing.type_history import TypeHistory

#: the least residual spread (log scale) a type is standardised with
MIN_SCALE = 0.01
#: a borrowed standardised residual is held within ± this many scales (a type whose
#: needs sit on a plateau has a tiny scale and outliers hundreds of scales out)
PRIOR_Z = 8.0
#: fewer residuals of its own: a type's spread is taken from the other types
MIN_OWN = 3
#: points a residual sample is compressed to (weighted quantiles) before smoothing
SAMPLE_POINTS = 256
#: fewer rows: an instance's residuals are not weighted by how near it they lie
MIN_NEAR = 8

Sample = tuple[np.ndarray, np.ndarray]


def standardise(resid: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Residuals as (r − median) / scale, with the median and the robust scale (MAD)."""
    if not len(resid):
        return resid, 0.0, MIN_SCALE
    med = median(resid)
    scale = max(1.4826 * median(np.abs(resid - med)), MIN_SCALE)
    return (resid - med) / scale, med, scale


def compress(
    values: np.ndarray, weights: np.ndarray, points: int, order: np.ndarray | None = None
) -> Sample:
    """A weighted sample as at most ``points`` equal-weight quantiles (same total weight);
    ``order``: the values' stable ascending order, when the caller keeps it (the same
    quantiles, without the sort)."""
    if len(values) <= points:
        return values, weights
    levels = (np.arange(points) + 0.5) / points
    total = weights.sum()
    if order is None:
        quantiles = sample_quantiles(values, weights, levels)
    else:
        quantiles = ranked_quantiles(values[order], (weights / total)[order], levels)
    return quantiles, np.full(points, total / points)


@dataclass(frozen=True)
class Anchored:
    """A model's finite residuals of a type's anchored rows and what every instance's
    sample of them shares until the anchor moves (`TypeHistory.move_anchor`): their rows'
    censoring, runtime weights (mean 1; ones when unweighted) and log input sizes, their
    stable ascending order (`compress`'s), the Kaplan–Meier order (`censored_weights`'s),
    and the uncensored ones' median and robust scale (`standardise`'s)."""

    resid: np.ndarray
    censored: np.ndarray
    weights: np.ndarray
    log_input: np.ndarray
    order: np.ndarray
    km_order: np.ndarray
    median: float
    scale: float


def anchored_residuals(state: TypeHistory, model: str, settings: SizingSettings) -> Anchored:
    """Model ``model``'s `Anchored` residuals of a type (one sort each, for every instance)."""
    resid = state.anchored(f"resid:{model}")
    known = np.isfinite(resid)
    resid, cens = resid[known], state.anchored("censored")[known] > 0
    rt = state.anchored("runtime")[known]
    use_rt = settings.runtime_weighted and len(rt) and rt.mean() > 0
    _, med, scale = standardise(resid[~cens])
    return Anchored(
        resid, cens, rt / rt.mean() if use_rt else np.ones(len(rt)),
        state.anchored("log_input")[known], np.argsort(resid, kind="stable"),
        np.lexsort((cens, resid)), med, scale,
    )  # fmt: skip


def observed_residuals(state: TypeHistory) -> np.ndarray:
    """A type's finite, uncensored residuals of its chosen model."""
    r = state.residuals(state.choice)
    return r[np.isfinite(r) & ~state.censored()]


def neighbourhood(xs: np.ndarray, x: float, share: float) -> np.ndarray | None:
    """Tricube weights of rows at ``xs`` for an instance at ``x`` (mean 1), the kernel
    reaching to the ⌈``share`` × rows⌉-th nearest row (at least `MIN_NEAR`); None where
    nearness tells nothing: a share of 0, fewer rows, an unknown input size, or that many
    rows at the instance's own."""
    n = len(xs)
    if share <= 0 or n < MIN_NEAR or not np.isfinite(x) or not np.isfinite(xs).all():
        return None
    d = np.abs(xs - x)
    k = max(MIN_NEAR, int(np.ceil(share * n)))
    reach = float(np.partition(d, k - 1)[k - 1])
    if not reach > 0:
        return None
    u = np.minimum(d / (reach * (1.0 + 1e-4)), 1.0)  # the k-th nearest keeps some weight
    kernel = (1.0 - u**3) ** 3
    return kernel * (n / kernel.sum())


def residual_sample(
    state: TypeHistory,
    model: str,
    prior: np.ndarray,
    others_scale: float | None,
    settings: SizingSettings,
    x: float = np.nan,
    base: Anchored | None = None,
) -> Sample:
    """Model ``model``'s residuals of a type's anchored rows (log scale) as a smoothed
    weighted sample with the other types' standardised shape ``prior`` mixed in (see the
    module's docstring), for an instance of log input size ``x`` (NaN: every row alike),
    in ascending order (every instance's ranking is then one pass); ``base``: what every
    instance's sample shares (`anchored_residuals`), kept by a caller that samples them
    for many instances (the same sample, without its sorts)."""
    base = base if base is not None else anchored_residuals(state, model, settings)
    resid, cens, w0 = base.resid, base.censored, base.weights
    near = neighbourhood(base.log_input, x, settings.neighbourhood_share)
    w = censored_weights(resid, cens, w0 if near is None else w0 * near, base.km_order)
    med, scale = base.median, base.scale
    if (~cens).sum() < MIN_OWN and others_scale is not None:  # a type sized cold
        scale = others_scale
    resid, w = compress(resid, w, SAMPLE_POINTS, base.order)
    if len(prior) and settings.prior_weight > 0:
        resid = np.concatenate((resid, med + prior * scale))
        w = np.concatenate((w, np.full(len(prior), settings.prior_weight / len(prior))))
    if near is not None:  # rows out of reach: no candidate at a value of no weight
        resid, w = resid[w > 0], w[w > 0]
    if not len(resid) or w.sum() <= 0:
        return np.zeros(0), np.zeros(0)
    values, weights = smooth(resid, w, bandwidth(resid, w), settings.kernel_nodes)
    order = np.argsort(values, kind="stable")
    return values[order], weights[order]


def pooled_prior(others: Iterable[TypeHistory]) -> tuple[np.ndarray, float | None]:
    """The other types' standardised residuals (each one's chosen model's, clipped and
    compressed: a type's prior) and the median of their scales (None: no other type has
    more than `MIN_OWN` pairs)."""
    parts = [standardise(observed_residuals(s)) for s in others if s.n_pairs() > MIN_OWN]
    if not parts:
        return np.zeros(0), None
    pooled = np.clip(np.concatenate([z for z, _, _ in parts]), -PRIOR_Z, PRIOR_Z)
    prior = compress(pooled, np.ones(len(pooled)), SAMPLE_POINTS)[0]
    return prior, float(np.median([sc for _, _, sc in parts]))


def request_sample(
    log_request: float, others: Iterable[TypeHistory], settings: SizingSettings
) -> Sample:
    """A type never seen: the user's request times how need related to request in the
    other types (log need − log request over their uncensored rows); none without a
    request."""
    ratios = []
    for s in others:
        if s.n_pairs():
            keep = ~s.censored()
            ratios.append(s.column("log_need")[keep] - s.column("log_request")[keep])
    ratios = np.concatenate(ratios) if ratios else np.zeros(0)
    ratios = ratios[np.isfinite(ratios)]
    if not np.isfinite(log_request) or not len(ratios):
        return np.zeros(0), np.zeros(0)
    vals, w = compress(ratios, np.ones(len(ratios)), SAMPLE_POINTS)
    vals, w = smooth(vals, w, bandwidth(vals, w), settings.kernel_nodes)
    return np.exp(log_request + vals), w
