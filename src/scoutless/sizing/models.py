"""Where a task type's log need sits given an instance's log input size: the candidates
the engine chooses among by the cost each would have run up (`engine.py`). Each predicts
a location; the spread around it is the candidate's own out-of-sample residuals."""

from __future__ import annotations

import numpy as np


class Location:
    """A location model over a type's observed (log input size, log need) pairs."""

    name = "location"

    def predict(self, xs: np.ndarray, ys: np.ndarray, x: float) -> float:
        raise NotImplementedError

    def loo(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """Leave-one-out residuals on the pairs (what a history tells of the spread)."""
        return np.array([
            ys[j] - self.predict(np.delete(xs, j), np.delete(ys, j), xs[j]) for j in range(len(ys))
        ])  # fmt: skip


class Mean(Location):
    """The mean log need: the type's marginal distribution, input size ignored."""

    name = "mean"

    def predict(self, xs: np.ndarray, ys: np.ndarray, x: float) -> float:
        return float(ys.mean()) if len(ys) else 0.0

    def loo(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        n = len(ys)
        return (ys - ys.mean()) * n / max(n - 1, 1) if n else ys


class Line(Location):
    """Least squares of log need on log input size, the input held to the range seen."""

    name = "line"

    def predict(self, xs: np.ndarray, ys: np.ndarray, x: float) -> float:
        ok = np.isfinite(xs)
        if ok.sum() < 3 or not np.isfinite(x):
            return Mean().predict(xs, ys, x)
        icpt, slope = line_fit(xs[ok], ys[ok])
        return icpt + slope * min(max(x, xs[ok].min()), xs[ok].max())

    def loo(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        ok = np.isfinite(xs)
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

    def predict(self, xs: np.ndarray, ys: np.ndarray, x: float) -> float:
        ok = np.isfinite(xs)
        if ok.sum() < 3 or not np.isfinite(x):
            return Mean().predict(xs, ys, x)
        xs, ys = xs[ok], ys[ok]
        k = min(len(ys), max(3, round(np.sqrt(len(ys)))))
        near = np.argpartition(np.abs(xs - x), k - 1)[:k]
        return float(ys[near].mean())


class Affine(Location):
    """Least squares of need on input size in bytes (Witt et al.'s line: a need that is a
    fixed base plus a share of the input), as a log location; the input held to the range
    seen and the line floored at the least need seen."""

    name = "affine"

    def predict(self, xs: np.ndarray, ys: np.ndarray, x: float) -> float:
        ok = np.isfinite(xs)
        if ok.sum() < 3 or not np.isfinite(x):
            return Mean().predict(xs, ys, x)
        raw_x, need = np.expm1(xs[ok]), np.exp(ys[ok])
        icpt, slope = line_fit(raw_x, need)
        x = min(max(np.expm1(x), raw_x.min()), raw_x.max())
        return float(np.log(max(icpt + slope * x, need.min())))


def line_fit(xs: np.ndarray, ys: np.ndarray) -> tuple[float, float]:
    """Intercept and slope of least squares (slope 0 when x is constant)."""
    dx = xs - xs.mean()
    sxx = float(dx @ dx)
    slope = float(dx @ (ys - ys.mean())) / sxx if sxx > 0 else 0.0
    return float(ys.mean() - slope * xs.mean()), slope


#: the candidates, in the order a tie is broken
CANDIDATES: tuple[Location, ...] = (Mean(), Line(), Neighbours(), Affine())
#: the candidates by name
BY_NAME: dict[str, Location] = {m.name: m for m in CANDIDATES}
