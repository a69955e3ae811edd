"""Fitted feature encoders: what turns a feature frame (or request records) into model arrays.

Fitted on the training rows only. Categoricals become vocabulary indices with index 0
reserved for missing, rare and never-seen values, so a new user or release never crashes
a prediction. Numericals become ``sign(x)·log1p(|x|)`` standardised; missing values stay
NaN here (XGBoost handles them natively; the DNN adds a missing flag).

The encoder remembers its feature schema (``feature_names_in_`` and kinds,
:class:`~scoutless.features.schema.FeatureSchema`), so a request with the wrong columns or
types is refused with a :class:`~scoutless.features.schema.SchemaError` that names them;
what it yields is :mod:`scoutless.features.encoded`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from scoutless.fast_paths import current
from scoutless.features.encoded import EncodedFeatures, InspectedFeatures
from scoutless.features.schema import FeatureInput, FeatureSchema
from scoutless.features.spec import FeatureSpec
from scoutless.features.training_range import TrainingRange, outside_rows

UNKNOWN_INDEX = 0


def signed_log1p(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.log1p(np.abs(x))


class FeatureEncoder(FeatureSchema):
    """Vocabulary + log-standardisation per feature, fitted on training rows.

    ``min_count``: categories seen fewer times in training map to the unknown index, so
    that index is learned from real rare values and not only from missing ones.
    """

    def __init__(self, features: Sequence[FeatureSpec], *, min_count: int = 2) -> None:
        if min_count < 1:
            raise ValueError(f"{min_count=} must be at least 1")
        super().__init__(features)
        self.min_count = min_count

    @property
    def cardinalities(self) -> list[int]:
        """Embedding table sizes: vocabulary plus the unknown index 0."""
        return [len(self.vocabulary_[name]) + 1 for name in self.categorical]

    # -- fitting ---------------------------------------------------------------------

    def fit(self, frame: pd.DataFrame) -> FeatureEncoder:
        self.feature_names_in_ = [f.name for f in self.features]
        typed = self.validate(frame)
        self.vocabulary_: dict[str, list[str]] = {}
        for name in self.categorical:
            counts = typed[name].value_counts(dropna=True)
            self.vocabulary_[name] = sorted(str(v) for v in counts.index[counts >= self.min_count])
        self.mean_: dict[str, float] = {}
        self.scale_: dict[str, float] = {}
        for name in self.numerical:
            logged = signed_log1p(typed[name].to_numpy(dtype=float))
            finite = logged[np.isfinite(logged)]
            mean = float(finite.mean()) if finite.size else 0.0
            std = float(finite.std()) if finite.size else 0.0
            self.mean_[name] = mean
            self.scale_[name] = std if std > 1e-12 else 1.0
        self.range_ = TrainingRange.of({n: typed[n].to_numpy(dtype=float) for n in self.numerical})
        self._build_lookups()
        return self

    def _build_lookups(self) -> None:
        self._lookup = {
            name: {v: i + 1 for i, v in enumerate(vocab)}
            for name, vocab in self.vocabulary_.items()
        }
        self._mean = np.array([self.mean_[n] for n in self.numerical], dtype=float)
        self._scale = np.array([self.scale_[n] for n in self.numerical], dtype=float)
        ranged: TrainingRange | None = getattr(self, "range_", None)
        self._range = ranged.encoded(self.numerical, self._standardised) if ranged else None

    def _standardised(self, raw: np.ndarray) -> np.ndarray:
        """(n, numericals) raw numbers, log1p-standardised as the models read them."""
        return (signed_log1p(raw) - self._mean) / self._scale

    def _check_fitted(self) -> None:
        if not hasattr(self, "vocabulary_"):
            raise RuntimeError("FeatureEncoder is not fitted; call fit(frame) first")

    # -- transforming ----------------------------------------------------------------

    def transform(self, data: FeatureInput) -> EncodedFeatures:
        """Model arrays for ``data`` (a DataFrame, one record, or a list of records)."""
        self._check_fitted()
        return self._encode(*self._typed_columns(data))

    def inspect(self, data: FeatureInput) -> InspectedFeatures:
        """Validate once, then everything a service needs: arrays, typed rows, unknowns."""
        self._check_fitted()
        categories, numbers, index = self._typed_columns(data)
        encoded = self._encode(categories, numbers, index)
        return InspectedFeatures(
            encoded=encoded,
            categories=categories,
            numbers=numbers,
            unknown=self._unknown(categories, len(index)),
            outside={} if self._range is None else outside_rows(
                encoded.numeric, self._range, self.numerical, numbers),
        )  # fmt: skip

    def _encode(
        self,
        categories: dict[str, list[str | None]],
        numbers: dict[str, np.ndarray],
        index: pd.Index | range,
    ) -> EncodedFeatures:
        n = len(index)
        codes = self._codes(categories, n)
        columns = [numbers[name] for name in self.numerical]
        if not columns:
            raw = np.empty((n, 0))
        elif n <= current().rows:  # many short columns: one conversion, not a call per column
            raw = np.array(columns, dtype=float).T
        else:  # long columns: column_stack writes them in place; the transpose would copy
            raw = np.column_stack(columns).astype(float, copy=False)
        return EncodedFeatures(codes, self._standardised(raw).astype(np.float32))

    def _codes(self, categories: dict[str, list[str | None]], n: int) -> np.ndarray:
        """(n, categoricals) int64 vocabulary indices. A dict lookup per value beats pandas'
        get_indexer at every size: the text lists are built anyway, and a string Index
        would convert them first."""
        if n <= current().rows:  # one conversion of the rows, not an assignment per column,
            # as the numericals. Row-major, as the column path: the ridges' sums over a
            # row's codes add in the order its layout gives
            columns = [[self._lookup[name].get(v, UNKNOWN_INDEX) for v in categories[name]]  # type: ignore[arg-type]
                       for name in self.categorical]  # fmt: skip
            rows = list(zip(*columns, strict=True))
            return np.array(rows, dtype=np.int64).reshape(n, len(self.categorical))
        codes = np.zeros((n, len(self.categorical)), dtype=np.int64)
        for j, name in enumerate(self.categorical):
            lookup = self._lookup[name]
            codes[:, j] = [lookup.get(v, UNKNOWN_INDEX) for v in categories[name]]  # type: ignore[arg-type]
        return codes

    def unknown_categories(self, data: FeatureInput) -> list[dict[str, str]]:
        """Per row: categorical feature -> value outside the training vocabulary."""
        self._check_fitted()
        categories, _, index = self._typed_columns(data)
        return self._unknown(categories, len(index))

    def _unknown(self, categories: dict[str, list[str | None]], n: int) -> list[dict[str, str]]:
        out: list[dict[str, str]] = [{} for _ in range(n)]
        for name in self.categorical:
            values, lookup = categories[name], self._lookup[name]
            unknown = [i for i, v in enumerate(values) if v is not None and v not in lookup]
            for i in unknown:
                out[i][name] = values[i]  # type: ignore[assignment]
        return out

    # -- persistence -----------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        return {
            "features": [f.to_dict() for f in self.features],
            "min_count": self.min_count,
            "vocabulary": self.vocabulary_,
            "mean": self.mean_,
            "scale": self.scale_,
            **({"range": self.range_.to_dict()} if getattr(self, "range_", None) else {}),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FeatureEncoder:
        enc = cls([FeatureSpec.from_dict(f) for f in d["features"]], min_count=d["min_count"])
        enc.feature_names_in_ = [f.name for f in enc.features]
        enc.vocabulary_ = {k: list(v) for k, v in d["vocabulary"].items()}
        enc.mean_ = {k: float(v) for k, v in d["mean"].items()}
        enc.scale_ = {k: float(v) for k, v in d["scale"].items()}
        enc.range_ = TrainingRange.from_dict(d.get("range"))  # None: saved without one
        enc._build_lookups()
        return enc
