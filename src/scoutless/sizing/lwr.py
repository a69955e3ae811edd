"""Witt et al.'s low-wastage regression (CCGrid 2019; github.com/carlwitt/low-wastage-regression,
run offline by Sizey's ``baselines/witt_low_wastage.py``): a first allocation a = slope·x +
intercept (x the input size) chosen to minimise the wastage the history would have run up
with retries that double, averaged over ten models each fitted on a 70 % subsample.

Each model starts COBYLA (≤ 200 steps) from five quantile-regression lines (quantiles
1 − a², a in linspace(0.01, 0.7, 5); slope the upper end of its 95 % interval) and one
inter-quartile line, on values min-max scaled to [0, 1]; the best line any step tried
(by MAQ) is the model's. The quantile regression is statsmodels' (iteratively reweighted
least squares, 50 steps; robust sandwich, Epanechnikov kernel, Hall–Sheather bandwidth),
written out here so the project needs no statsmodels. The reference code's quirk stays: a
predictor that barely varies (range ≤ 5 % of its mean) starts from the *predictor's*
quantiles as intercepts.

`LowWastage` is the method in the online protocol (the need ``rss``, x the input size the
features option gives, refitted whenever the needs seen have grown by `REFIT_GROWTH`);
`offline` runs it as published (its own 30 % sample by ``DataFrame.sample(frac=0.3,
random_state=seed)``, the need ``peak_rss``, x the peers' ``rchar``: instances read with
the ``peers-rchar`` features option).

Speed without another answer: SciPy's COBYLA is PRIMA's in Python, where nearly all of a
fit's time goes; its constraint work (decided in advance here, there are none) is skipped
by `unconstrained_cobyla.free_of_constraints`, a start identical to an earlier one of the
same model is not run again (it would try the same lines: the best tried stays the first
found), and a fit is kept by its inputs, so the same history fitted again (the live
protocol's first fit of each type, the peers' protocol's too) is not redone."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import scipy.optimize as spo
from scipy.stats import iqr, norm
from scipy.stats import t as student_t

from scoutless.sizing.protocol import Instances, Outcome, Tally, TaskType, charge
from scoutless.sizing.unconstrained_cobyla import free_of_constraints

#: the ten models' subsample share, the optimiser's steps, the floor (scaled units)
SUBSAMPLE, MODELS, COBYLA_STEPS, MIN_ALLOCATION = 0.7, 10, 200, 0.01
#: quantile-regression steps (statsmodels' ``max_iter`` as the reference code sets it)
QR_STEPS = 50
#: the online method refits when the needs seen have grown by this factor since its last fit
REFIT_GROWTH = 2.0
#: fits kept by their inputs (a fit is ten lines: a few hundred bytes each)
KEPT_FITS = 4096


def pandas_sample(n: int, frac: float, seed: int) -> np.ndarray:
    """The positions ``DataFrame.sample(frac=frac, random_state=seed)`` picks, in its order."""
    return np.random.RandomState(seed).permutation(n)[: round(frac * n)]


def quantile_line(x: np.ndarray, y: np.ndarray, q: float) -> tuple[float, float]:
    """statsmodels' ``quantreg('y ~ x').fit(q, max_iter=50)``: intercept and the upper end
    of the slope's 95 % interval (NaN when undefined)."""
    exog = np.column_stack((np.ones(len(x)), x))
    beta, xstar = np.ones(2), exog
    for _ in range(QR_STEPS):
        beta0 = beta
        beta = np.linalg.pinv(xstar.T @ exog) @ (xstar.T @ y)
        resid = y - exog @ beta
        small = np.abs(resid) < 1e-6
        resid[small] = ((resid[small] >= 0) * 2 - 1) * 1e-6
        resid = np.abs(np.where(resid < 0, q * resid, (1 - q) * resid))
        xstar = exog / resid[:, None]
        if np.max(np.abs(beta - beta0)) <= 1e-6:
            break
    n = len(y)
    e = y - exog @ beta
    z = norm.ppf(q)
    hs = n ** (-1 / 3) * norm.ppf(0.975) ** (2 / 3) * (1.5 * norm.pdf(z) ** 2 / (2 * z**2 + 1)) ** (1 / 3)
    iqre = np.percentile(e, 75) - np.percentile(e, 25)
    h = min(np.std(y), iqre / 1.34) * (norm.ppf(q + hs) - norm.ppf(q - hs))
    with np.errstate(divide="ignore", invalid="ignore"):
        u = e / h
        fhat = np.sum(0.75 * (1 - u**2) * (np.abs(u) <= 1)) / (n * h)
        d = np.where(e > 0, (q / fhat) ** 2, ((1 - q) / fhat) ** 2)
        xtxi = np.linalg.pinv(exog.T @ exog)
        vcov = xtxi @ ((exog.T * d) @ exog) @ xtxi
    upper = beta[1] + student_t.ppf(0.975, n - 2) * np.sqrt(vcov[1, 1])
    return float(beta[0]), float(upper)


def exponential_waste(
    alloc: np.ndarray, need: np.ndarray, runtime: np.ndarray
) -> tuple[float, float, int]:
    """Over- and undersizing (× runtime) and failures when each failure doubles (base 2,
    time to failure the whole runtime): the reference code's ``Wastage.exponential``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.maximum(np.ceil(np.log(need / alloc) / np.log(2.0)), 0.0)  # np.clip's, faster
    under = alloc * (2.0**k - 1) * runtime
    over = (alloc * 2.0**k - need) * runtime
    return float(over.sum()), float(under.sum()), int(k.sum())


def _model(x: np.ndarray, y: np.ndarray, t: np.ndarray, varies: bool) -> tuple[float, float]:
    """One model: the (slope, intercept) of least wastage COBYLA tried from every start."""
    qs = [1 - a**2 for a in np.linspace(0.01, 0.7, 5)]
    starts = []
    for q in qs:
        if not varies:  # the reference code's quirk: the predictor's quantile
            starts.append((0.0, float(np.quantile(x, q))))
            continue
        icpt, slope = quantile_line(x, y, q)
        starts.append((slope, icpt) if np.isfinite(slope) else (0.0, float(np.quantile(y, q))))
    ix = iqr(x)
    slope = iqr(y) / ix if ix > 0 else 0.0
    starts.append((slope, float(y.mean() - slope * x.mean())))
    tried: list[tuple[float, tuple[float, float]]] = []

    def waste(p: np.ndarray) -> float:
        over, under, _ = exponential_waste(np.maximum(x * p[0] + p[1], MIN_ALLOCATION), y, t)
        tried.append((over + under, (float(p[0]), float(p[1]))))
        return over + under

    for s in dict.fromkeys(starts):  # a start run before tries the same lines again
        spo.minimize(waste, np.array(s), method="COBYLA", options={"maxiter": COBYLA_STEPS})
    return min(tried, key=lambda w: w[0])[1]  # MAQ's best: usage is fixed, so least waste


@dataclass(frozen=True)
class LwrFit:
    """The fitted ensemble: the scaling (shift, scale per axis) and the ten lines."""

    shift: tuple[float, float]
    scale: tuple[float, float]
    lines: tuple[tuple[float, float], ...]

    def predict(self, x: np.ndarray | float) -> np.ndarray:
        xs = (_known(np.asarray(x, dtype=float)) - self.shift[0]) / self.scale[0]
        a = np.mean([np.clip(xs * s + i, MIN_ALLOCATION, None) for s, i in self.lines], axis=0)
        return a * self.scale[1] + self.shift[1]


def _known(x: np.ndarray) -> np.ndarray:
    """An input size not known (NaN: none before the run) as 0: the line is then a constant."""
    return np.where(np.isfinite(x), x, 0.0)


_fits: OrderedDict[tuple, LwrFit] = OrderedDict()


def fit(x: np.ndarray, need: np.ndarray, runtime: np.ndarray) -> LwrFit:
    """The ensemble on a history (input sizes, needs, runtimes), as the reference trains it;
    the same history (and constants) again gets the fit kept from the first time."""
    x, need, runtime = (np.asarray(v, dtype=float) for v in (x, need, runtime))
    key = (MODELS, SUBSAMPLE, COBYLA_STEPS, MIN_ALLOCATION, QR_STEPS, len(x),
           x.tobytes(), need.tobytes(), runtime.tobytes())  # fmt: skip
    if key in _fits:
        _fits.move_to_end(key)
        return _fits[key]
    with free_of_constraints():
        model = _fit(x, need, runtime)
    _fits[key] = model
    if len(_fits) > KEPT_FITS:
        _fits.popitem(last=False)
    return model


def _fit(x: np.ndarray, need: np.ndarray, runtime: np.ndarray) -> LwrFit:
    x = _known(x)
    shift = (float(x.min()), float(need.min()))
    ptp = (float(np.ptp(x)), float(np.ptp(need)))
    scale = tuple(p if p != 0 else 1.0 for p in ptp)
    xs, ys = (x - shift[0]) / scale[0], (need - shift[1]) / scale[1]
    varies = ptp[0] > 0.05 * x.mean()
    lines = []
    for i in range(MODELS):
        pick = pandas_sample(len(xs), SUBSAMPLE, i)
        lines.append(_model(xs[pick], ys[pick], runtime[pick], varies))
    return LwrFit(shift, scale, tuple(lines))  # type: ignore[arg-type]


class LowWastage:
    """The low-wastage regression in the online protocol: fitted on the type's history,
    refitted as outcomes come in (see `REFIT_GROWTH`); a failure doubles."""

    name = "witt_lwr"

    def begin(self, task: TaskType) -> None:
        h = task.history
        self.x, self.need, self.time = list(h.input_size), list(h.need), list(h.runtime)
        self._refit()

    def _refit(self) -> None:
        self.model = fit(np.array(self.x), np.array(self.need), np.array(self.time))
        self.fitted = len(self.need)

    def first(self, task: TaskType, i: int) -> float:
        return float(self.model.predict(float(task.online.input_size[i])))

    def retry(self, task: TaskType, i: int, failed: float) -> float:
        return failed * 2

    def learn(self, task: TaskType, i: int, outcome: Outcome) -> None:
        on = task.online
        self.x.append(float(on.input_size[i]))
        self.need.append(outcome.need)
        self.time.append(float(on.runtime[i]))
        if len(self.need) >= self.fitted * REFIT_GROWTH:
            self._refit()


def offline(inst: Instances, seed: int) -> Tally:
    """As published: fitted once on ``sample(frac=0.3, random_state=seed)`` of the type's
    eligible rows with ``peak_rss`` as the need and the input size as x (the peers'
    ``rchar`` when read with ``peers-rchar``), evaluated on the rest in table order."""
    train = pandas_sample(len(inst), 0.3, seed)
    rest = np.setdiff1d(np.arange(len(inst)), train)
    model = fit(inst.input_size[train], inst.peak[train], inst.runtime[train])
    total = Tally()
    for j, a in zip(rest, model.predict(inst.input_size[rest]), strict=True):
        need, runtime = float(inst.peak[j]), float(inst.runtime[j])
        allocs = [float(a)]
        while allocs[-1] < need:
            allocs.append(allocs[-1] * 2)
        total.add(charge(need, runtime, allocs))
    return total


def offline_workflow(types: list[tuple[str, Instances]], seed: int) -> dict[str, float | int]:
    """The published offline run over a workflow's eligible types (`eligible_types`): one cell."""
    total = Tally()
    for _, inst in types:
        total.add(offline(inst, seed))
    return total.summary()
