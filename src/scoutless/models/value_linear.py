"""The linear start of a value model's location: a ridge regression of the logged value on
every category (one-hot: a shrunken effect per release, user, transformation …) and every
numerical feature (with a missing indicator), that the trees then correct.

Why: the value's log is mostly a sum of such effects (a release costs 20 % more memory
whichever transformation runs it; walltime grows with the events per job), which trees
approximate with many steps and, on ordinal vocabulary codes, with splits that group
unrelated categories; a ridge gives each category its own effect, shrunk by how many rows
show it (a random-effects estimate). Served, it is a few table look-ups and a dot product.
Its penalty is chosen over the value model's own folds (:func:`choose_alpha`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from scoutless.features.encoded import EncodedFeatures

#: the ridge penalties tried (features standardised, categories 0/1)
ALPHAS: tuple[float, ...] = (3.0, 10.0, 30.0)


def _design(X: EncodedFeatures, widths: np.ndarray):  # type: ignore[no-untyped-def]
    """Sparse (n, numericals + their missing flags + one column per category)."""
    import scipy.sparse as sp

    numeric = np.asarray(X.numeric, dtype=float)
    missing = np.isnan(numeric)
    dense = np.hstack([np.where(missing, 0.0, numeric), missing.astype(float)])
    rows = np.repeat(np.arange(len(X)), X.codes.shape[1])
    cols = _columns(X.codes, widths).ravel()
    onehot = sp.csr_matrix(
        (np.ones(len(cols)), (rows, cols)), shape=(len(X), int(widths.sum()))
    )  # fmt: skip
    return sp.hstack([sp.csr_matrix(dense), onehot]).tocsr()


def _columns(codes: np.ndarray, widths: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
    """(n, categoricals) each code's column in the one-hot block (``starts``: each
    feature's first column); a code the fit never saw (past its width) as that feature's
    unknown, index 0."""
    codes = np.where((codes >= 0) & (codes < widths), codes, 0)
    return codes + (_starts(widths) if starts is None else starts)


def _starts(widths: np.ndarray) -> np.ndarray:
    return np.r_[0, np.cumsum(widths)[:-1]].astype(np.int64)


@dataclass(frozen=True)
class LinearBase:
    """``intercept + numeric · weights + missing · missing_weights + Σ effect[code]``."""

    intercept: float
    weights: np.ndarray  # (numericals,)
    missing_weights: np.ndarray  # (numericals,)
    widths: np.ndarray  # (categoricals,) codes 0 .. width - 1 have an effect
    effects: np.ndarray  # (widths.sum(),) every feature's categories, one after the other
    alpha: float

    @classmethod
    def fit(cls, X: EncodedFeatures, y: np.ndarray, alpha: float) -> LinearBase:
        from sklearn.linear_model import Ridge

        widths = (X.codes.max(axis=0, initial=0) + 1).astype(np.int64)
        ridge = Ridge(alpha=alpha, tol=1e-3).fit(_design(X, widths), np.asarray(y, dtype=float))
        coef, m = ridge.coef_, X.numeric.shape[1]
        return cls(float(ridge.intercept_), coef[:m], coef[m : 2 * m], widths, coef[2 * m :], alpha)

    def predict(self, X: EncodedFeatures) -> np.ndarray:
        # rows laid out one after the other (C order): a sum along a row of a column-major
        # array adds column by column, in another order than the row alone gets
        numeric = np.ascontiguousarray(X.numeric, dtype=float)
        missing = np.isnan(numeric)
        # row by row (elementwise, then a sum along each row), not a matrix product: BLAS
        # rounds a row differently by the rows beside it, and a task's value must be the
        # one it gets alone (the service groups requests)
        out = self.intercept + (np.where(missing, 0.0, numeric) * self.weights).sum(axis=1)
        out += np.where(missing, self.missing_weights, 0.0).sum(axis=1)
        return out + self.effects[_columns(X.codes, self.widths, self._starts)].sum(axis=1)

    @cached_property
    def _starts(self) -> np.ndarray:
        return _starts(self.widths)

    def save(self, path: Path) -> None:
        np.savez(
            path, intercept=self.intercept, weights=self.weights,
            missing_weights=self.missing_weights, widths=self.widths, effects=self.effects,
            alpha=self.alpha,
        )  # fmt: skip

    @classmethod
    def load(cls, path: Path) -> LinearBase:
        with np.load(path) as f:
            return cls(
                float(f["intercept"]), f["weights"], f["missing_weights"], f["widths"],
                f["effects"], float(f["alpha"]),
            )  # fmt: skip


@dataclass(frozen=True)
class JointLinear:
    """Several targets' :class:`LinearBase` on the same rows in one pass: their parameters
    stacked (one row per target), so a served request's ridges cost a dozen numpy calls in
    all rather than per target. Every product, gather and per-row sum is the one
    :meth:`LinearBase.predict` makes, so each target's numbers are its own call's."""

    intercepts: np.ndarray  # (t, 1)
    weights: np.ndarray  # (t, 1, numericals)
    missing_weights: np.ndarray  # (t, 1, numericals)
    widths: np.ndarray  # (t, 1, categoricals)
    starts: np.ndarray  # (t, 1, categoricals) each feature's first effect in ``effects``
    effects: np.ndarray  # every target's effects, one after the other

    @classmethod
    def of(cls, bases: Sequence[LinearBase]) -> JointLinear:
        if len({b.widths.shape for b in bases}) > 1 or len({b.weights.shape for b in bases}) > 1:
            raise ValueError("ridges of different feature sets cannot predict together")
        firsts = np.cumsum([0, *(len(b.effects) for b in bases[:-1])])
        return cls(
            np.array([[b.intercept] for b in bases], dtype=float),
            np.stack([b.weights for b in bases])[:, None, :],
            np.stack([b.missing_weights for b in bases])[:, None, :],
            np.stack([b.widths for b in bases])[:, None, :],
            np.stack([b._starts + first for b, first in zip(bases, firsts, strict=True)])[
                :, None, :
            ],
            np.concatenate([b.effects for b in bases]),
        )

    def predict(self, X: EncodedFeatures) -> np.ndarray:
        """(t, n) each target's :meth:`LinearBase.predict` (the sums ``ndarray.sum`` makes,
        by ``np.add.reduce`` itself, without its Python wrapper on every request)."""
        numeric = np.ascontiguousarray(X.numeric, dtype=float)  # as LinearBase.predict
        missing = np.isnan(numeric)
        out = self.intercepts + np.add.reduce(np.where(missing, 0.0, numeric) * self.weights, 2)
        out += np.add.reduce(np.where(missing, self.missing_weights, 0.0), 2)
        codes = X.codes[None]
        codes = np.where((codes >= 0) & (codes < self.widths), codes, 0)  # as _columns
        return out + np.add.reduce(self.effects[codes + self.starts], 2)


def choose_alpha(
    X: EncodedFeatures, y: np.ndarray, fold: np.ndarray, alphas: tuple[float, ...] = ALPHAS
) -> float:
    """The penalty whose ridge predicts the held-out folds best (squared error)."""
    errors = [
        sum(
            float(np.sum((LinearBase.fit(X.take(np.flatnonzero(fold != k)), y[fold != k], a)
                          .predict(X.take(np.flatnonzero(fold == k))) - y[fold == k]) ** 2))
            for k in np.unique(fold)
        )
        for a in alphas
    ]  # fmt: skip
    return alphas[int(np.argmin(errors))]
