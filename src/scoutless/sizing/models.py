"""Where a task type's log need sits given what is known of an instance (its log input size,
or its log cores): the candidates the online sizer chooses among by the cost each would have
run up (`online.py`). Each predicts a location; the spread around it is the candidate's own
out-of-sample residuals."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

#: a location model fitted to a type's pairs: the log need it puts at a log input size
Fitted = Callable[[float], float]


class Location:
    """A location model over a type's observed (feature, log need) pairs; ``feature`` names
    both the `TypeHistory` column and the `Release` method that gives it (log input size
    unless a model says otherwise)."""

    name = "location"
    feature = "log_input"

    def fit(self, xs: np.ndarray, ys: np.ndarray) -> Fitted:
        """The model on these pairs, to be asked at many inputs (what an instance's
        sizing and each candidate's shadow plan ask between two outcomes)."""
        raise NotImplementedError

    def predict(self, xs: np.ndarray, ys: np.ndarray, x: float) -> float:
        return self.fit(xs, ys)(x)

    def loo(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """Leave-one-out residuals on the pairs (what a history tells of the spread)."""
        return np.array([
            ys[j] - self.predict(np.delete(xs, j), np.delete(ys, j), xs[j]) for j in range(len(ys))
        ])  # fmt: skip


def _constant(value: float) -> Fitted:
    return lambda x: value


class Mean(Location):
    """The mean log need: the type's marginal distribution, input size ignored."""

    name = "mean"

    def fit(self, xs: np.ndarray, ys: np.ndarray) -> Fitted:
        return _constant(float(ys.mean()) if len(ys) else 0.0)

    def loo(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        n = len(ys)
        return (ys - ys.mean()) * n / max(n - 1, 1) if n else ys


def _or_mean(fitted: Fitted, ys: np.ndarray) -> Fitted:
    """``fitted`` at a finite input, the mean log need where the input is unknown."""
    return lambda x: fitted(x) if math.isfinite(x) else Mean().predict(ys, ys, x)


class Line(Location):
    """Least squares of log need on log input size, the input held to the range seen."""

    name = "line"

    def fit(self, xs: np.ndarray, ys: np.ndarray) -> Fitted:
        ok = np.isfinite(xs)
        if ok.sum() < 3:
            return Mean().fit(xs, ys)
        icpt, slope = line_fit(xs[ok], ys[ok])
        lo, hi = xs[ok].min(), xs[ok].max()
        return _or_mean(lambda x: icpt + slope * min(max(x, lo), hi), ys)

    def loo(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        ok = np.isfinite(xs)
        if not ok.any():  # every refit is the mean
            return Mean().loo(xs, ys)
        if not ok.all() or len(ys) < 4:
            return super().loo(xs, ys)
        icpt, slope = line_fit(xs, ys)
        dx = xs - xs.mean()
        sxx = float(dx @ dx)
        if sxx <= 0:
            return Mean().loo(xs, ys)
        hat = 1.0 / len(ys) + dx**2 / sxx
        return (ys - icpt - slope * xs) / np.maximum(1.0 - hat, 1e-6)


class Neighbours(Location):
    """The mean log need of the √n (at least 3) instances nearest in log input size: what
    a line misses (a need that plateaus, steps, or turns)."""

    name = "neighbours"

    def fit(self, xs: np.ndarray, ys: np.ndarray) -> Fitted:
        ok = np.isfinite(xs)
        if ok.sum() < 3:
            return Mean().fit(xs, ys)
        every = ys
        xs, ys = xs[ok], ys[ok]
        k = min(len(ys), max(3, round(np.sqrt(len(ys)))))

        def nearest(x: float) -> float:
            return float(ys[np.argpartition(np.abs(xs - x), k - 1)[:k]].mean())

        return _or_mean(nearest, every)

    def loo(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """`fit`'s leave-one-out residuals without a refit per row: in 1-D a row's k
        nearest others lie within k places of it in sorted order."""
        ok = np.isfinite(xs)
        out = _others_mean_residuals(ys)  # a row of unknown input, or too few others
        m = int(ok.sum()) - 1  # the others of known input a row of known input is fitted on
        if m < 3:
            return out
        k = min(m, max(3, round(np.sqrt(m))))
        order = np.argsort(xs[ok], kind="stable")
        x, y = xs[ok][order], ys[ok][order]
        offsets = np.concatenate((np.arange(-k, 0), np.arange(1, k + 1)))
        near = np.empty(len(x))
        for lo in range(0, len(x), NEAR_BLOCK):  # rows × 2k distances, a block at a time
            at = np.arange(lo, min(lo + NEAR_BLOCK, len(x)))
            idx = at[:, None] + offsets
            inside = (idx >= 0) & (idx < len(x))
            idx = np.clip(idx, 0, len(x) - 1)
            dist = np.where(inside, np.abs(x[idx] - x[at, None]), np.inf)
            pick = np.argpartition(dist, k - 1, axis=1)[:, :k]
            near[at] = y[np.take_along_axis(idx, pick, axis=1)].mean(axis=1)
        rows = np.flatnonzero(ok)[order]
        out[rows] = y - near
        return out


#: rows whose nearest others are found at once (`Neighbours.loo`)
NEAR_BLOCK = 4096


def _others_mean_residuals(ys: np.ndarray) -> np.ndarray:
    """Each row's log need less the mean of the others' (a refit that is the mean)."""
    n = len(ys)
    return ys - (ys.sum() - ys) / (n - 1) if n > 1 else np.full(n, np.nan)


class Affine(Location):
    """Least squares of need on input size in bytes (Witt et al.'s line: a need that is a
    fixed base plus a share of the input), as a log location; the input held to the range
    seen and the line floored at the least need seen."""

    name = "affine"

    def fit(self, xs: np.ndarray, ys: np.ndarray) -> Fitted:
        ok = np.isfinite(xs)
        if ok.sum() < 3:
            return Mean().fit(xs, ys)
        raw_x, need = np.expm1(xs[ok]), np.exp(ys[ok])
        icpt, slope = line_fit(raw_x, need)
        lo, hi, floor = raw_x.min(), raw_x.max(), need.min()

        def line(x: float) -> float:
            return float(np.log(max(icpt + slope * min(max(np.expm1(x), lo), hi), floor)))

        return _or_mean(line, ys)

    def loo(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """`fit`'s leave-one-out residuals in closed form: each row's line from the sums
        less its own (bytes centred first), its range and floor from the others' extremes."""
        ok = np.isfinite(xs)
        out = _others_mean_residuals(ys)
        m = int(ok.sum()) - 1
        if m < 3:
            return out
        raw, need = np.expm1(xs[ok]), np.exp(ys[ok])
        lo, hi = _others_extreme(raw, np.min), _others_extreme(raw, np.max)
        mean_d, mean_n, slope = _others_lines(raw, need, hi > lo)
        at = np.clip(raw, lo, hi) - raw.mean()
        pred = np.maximum(mean_n + slope * (at - mean_d), _others_extreme(need, np.min))
        out[ok] = ys[ok] - np.log(pred)
        return out


def _others_lines(
    x: np.ndarray, y: np.ndarray, varies: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row, least squares of ``y`` on ``x`` over the other rows, from the sums less the
    row's own (x centred first): the others' mean x (centred), mean y and slope (0 where
    ``varies`` says the others' x do not)."""
    m = len(x) - 1
    d = x - x.mean()
    sd, sy = d.sum() - d, y.sum() - y
    sdd, sdy = (d @ d) - d * d, (d @ y) - d * y
    mean_d, mean_y = sd / m, sy / m
    sxx, sxy = sdd - m * mean_d**2, sdy - m * mean_d * mean_y
    spread = varies & (sxx > 0)
    return mean_d, mean_y, np.where(spread, sxy / np.where(spread, sxx, 1.0), 0.0)


def _others_extreme(values: np.ndarray, pick: Callable) -> np.ndarray:
    """Per row, ``pick`` (np.min or np.max) of the other rows' values (n ≥ 2)."""
    order = np.argsort(values, kind="stable")
    first, second = (order[0], order[1]) if pick is np.min else (order[-1], order[-2])
    out = np.full(len(values), values[first])
    out[first] = values[second]
    return out


class Cores(Location):
    """Least squares of log need on log cores, the slope held to [-1, 1]: a job's memory
    lies between a fixed amount and one proportional to its cores (AthenaMP's shared base
    plus a worker's share each), a core's memory and a job's time between constant and
    inversely proportional, so the line extrapolates to cores not yet seen (a task's first
    16-core job after 4- and 8-core ones) no steeper than that. Where a type's cores do not
    vary it is the mean, bit for bit (its place last among the candidates breaks the tie)."""

    name = "cores"
    feature = "log_cores"

    def fit(self, xs: np.ndarray, ys: np.ndarray) -> Fitted:
        ok = np.isfinite(xs)
        if ok.sum() < 3 or np.ptp(xs[ok]) == 0:
            return Mean().fit(xs, ys)
        icpt, slope = _bounded(xs[ok], ys[ok])
        return _or_mean(lambda x: icpt + slope * x, ys)

    def loo(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        ok = np.isfinite(xs)
        if ok.sum() < 3 or np.ptp(xs[ok]) == 0:  # every refit is the mean: its closed form
            return Mean().loo(xs, ys)
        if not ok.all() or len(ys) < 4 or abs(line_fit(xs, ys)[1]) > MAX_CORES_SLOPE:
            return _bounded_loo(xs, ys)
        return Line().loo(xs, ys)  # the unbounded line's closed form (its slope in bounds)


def _bounded_loo(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """`Cores.fit`'s leave-one-out residuals from the sums less each row's own (a prior's
    points at unknown cores beside the jobs' otherwise cost a refit per row): a row of
    unknown cores, or one whose others hold fewer than three known cores or one value of
    them, against the others' mean; any other against the others' bounded line."""
    ok = np.isfinite(xs)
    out = _others_mean_residuals(ys)
    m = int(ok.sum()) - 1
    if m < 3:
        return out
    x, y = xs[ok], ys[ok]
    varies = _others_extreme(x, np.max) > _others_extreme(x, np.min)
    mean_d, mean_y, slope = _others_lines(x, y, varies)
    slope = np.clip(slope, -MAX_CORES_SLOPE, MAX_CORES_SLOPE)
    pred = mean_y + slope * (x - x.mean() - mean_d)
    out[ok] = np.where(varies, y - pred, out[ok])
    return out


#: how steeply a log need may follow log cores (`Cores`)
MAX_CORES_SLOPE = 1.0


def _bounded(xs: np.ndarray, ys: np.ndarray) -> tuple[float, float]:
    """Least squares with the slope held to ±`MAX_CORES_SLOPE` (the intercept refitted)."""
    icpt, slope = line_fit(xs, ys)
    if abs(slope) <= MAX_CORES_SLOPE:
        return icpt, slope
    slope = float(np.clip(slope, -MAX_CORES_SLOPE, MAX_CORES_SLOPE))
    return float(ys.mean() - slope * xs.mean()), slope


def line_fit(xs: np.ndarray, ys: np.ndarray) -> tuple[float, float]:
    """Intercept and slope of least squares (slope 0 when x is constant)."""
    dx = xs - xs.mean()
    sxx = float(dx @ dx)
    slope = float(dx @ (ys - ys.mean())) / sxx if sxx > 0 else 0.0
    return float(ys.mean() - slope * xs.mean()), slope


#: the candidates, in the order a tie is broken
CANDIDATES: tuple[Location, ...] = (Mean(), Line(), Neighbours(), Affine(), Cores())
#: the candidates by name
BY_NAME: dict[str, Location] = {m.name: m for m in CANDIDATES}
