# Left whole: one concept, the fitted encoder (its schema check and the arrays it yields).
"""Fitted feature encoders: what turns a feature frame (or request records) into model arrays.

Fitted on the training rows only. Categoricals become vocabulary indices with index 0
reserved for missing, rare and never-seen values, so a new user or release never crashes
a prediction. Numericals become ``sign(x)·log1p(|x|)`` standardised; missing values stay
NaN here (XGBoost handles them natively; the DNN adds a missing flag).

The encoder remembers its feature schema (``feature_names_in_`` and kinds), so a request
with the wrong columns or types is refused with a :class:`SchemaError` that names them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from scoutless.config import get_settings
from scoutless.features.normalise import category_text, is_category_scalar, number_or_none
from scoutless.features.spec import FeatureSpec
from scoutless.features.training_range import TrainingRange, outside_rows

UNKNOWN_INDEX = 0
#: Up to this many rows, plain Python lists are faster than pandas/vectorised lookups
#: (``Settings.inference.small_batch``, read once at import: it is on the hot path).
SMALL_BATCH = get_settings().inference.small_batch


class SchemaError(ValueError):
    """Input whose columns or value types differ from the schema the encoder was fitted on."""

    def __init__(
        self,
        message: str,
        *,
        missing: Sequence[str] = (),
        unexpected: Sequence[str] = (),
        wrong_type: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.missing = list(missing)
        self.unexpected = list(unexpected)
        self.wrong_type = dict(wrong_type or {})


@dataclass(frozen=True)
class EncodedFeatures:
    """Model-ready arrays for ``n`` rows.

    ``codes``: (n, n_categorical) int64 vocabulary indices, 0 = unknown/missing.
    ``numeric``: (n, n_numerical) float32, log1p-standardised, NaN where missing.
    """

    codes: np.ndarray
    numeric: np.ndarray
    _memo: dict[Hashable, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def __len__(self) -> int:
        return self.codes.shape[0]

    def memo(self, key: Hashable, make: Callable[[], np.ndarray]) -> np.ndarray:
        """``make()`` made once per ``key`` for these rows: what several models read of
        the same rows (the trees' matrix: a request's classifiers and value models read
        one). Not to be written to: every reader gets the same array."""
        made = self._memo.get(key)
        if made is None:
            made = self._memo[key] = make()
        return made

    def take(self, rows: np.ndarray) -> EncodedFeatures:
        return EncodedFeatures(self.codes[rows], self.numeric[rows])

    @staticmethod
    def stack(parts: Sequence[EncodedFeatures]) -> EncodedFeatures:
        """The rows of ``parts``, one after the other."""
        return EncodedFeatures(
            np.concatenate([p.codes for p in parts]), np.concatenate([p.numeric for p in parts])
        )


Records = Sequence[Mapping[str, Any]]
FeatureInput = pd.DataFrame | Records | Mapping[str, Any]


def signed_log1p(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.log1p(np.abs(x))


@dataclass(frozen=True)
class InspectedFeatures:
    """One validation pass over request rows: model arrays, typed values, unknown categories."""

    encoded: EncodedFeatures
    categories: dict[str, list[str | None]]
    numbers: dict[str, np.ndarray]
    unknown: list[dict[str, str]]
    #: rows with a value outside the training range: feature -> value (training_range.py)
    outside: dict[int, dict[str, float]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.encoded)

    @staticmethod
    def stack(parts: Sequence[InspectedFeatures]) -> InspectedFeatures:
        """The rows of ``parts`` (inspected by one encoder), one after the other."""
        return _StackedFeatures(parts)

    def rows(self, names: Sequence[str]) -> list[dict[str, Any]]:
        """Every row as typed values (NaN -> None), e.g. for the prediction log.

        Column by column (one ``tolist`` per numerical) rather than element by element:
        a 1,000-task batch's rows take ~4 ms instead of ~40."""
        columns: list[list[Any]] = []
        for name in names:
            if name in self.categories:
                columns.append(self.categories[name])
            else:
                columns.append([None if v != v else v for v in self.numbers[name].tolist()])
        return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


class _StackedFeatures(InspectedFeatures):
    """Several requests' :class:`InspectedFeatures` as one: the model arrays stacked at
    once, the typed values and unknown categories only when read (a group of served
    requests' decisions read the numbers for the value and cost policies, the unknowns for
    cost, the categories never: ~7 us less a group of 4 under cost, more under argmax)."""

    def __init__(self, parts: Sequence[InspectedFeatures]) -> None:  # not the dataclass's
        object.__setattr__(self, "_parts", tuple(parts))
        object.__setattr__(self, "encoded", EncodedFeatures.stack([p.encoded for p in parts]))

    @functools.cached_property
    def categories(self) -> dict[str, list[str | None]]:  # type: ignore[override]
        parts = self._parts
        return {k: [v for p in parts for v in p.categories[k]] for k in parts[0].categories}

    @functools.cached_property
    def numbers(self) -> dict[str, np.ndarray]:  # type: ignore[override]
        parts = self._parts
        return {k: np.concatenate([p.numbers[k] for p in parts]) for k in parts[0].numbers}

    @functools.cached_property
    def unknown(self) -> list[dict[str, str]]:  # type: ignore[override]
        return [u for p in self._parts for u in p.unknown]

    @functools.cached_property
    def outside(self) -> dict[int, dict[str, float]]:  # type: ignore[override]
        starts = np.cumsum([0, *(len(p) for p in self._parts)]).tolist()
        parts = zip(self._parts, starts, strict=False)
        return {lo + row: values for p, lo in parts for row, values in p.outside.items()}


class FeatureEncoder:
    """Vocabulary + log-standardisation per feature, fitted on training rows.

    ``min_count``: categories seen fewer times in training map to the unknown index, so
    that index is learned from real rare values and not only from missing ones.
    """

    def __init__(self, features: Sequence[FeatureSpec], *, min_count: int = 2) -> None:
        if min_count < 1:
            raise ValueError(f"{min_count=} must be at least 1")
        self.features = list(features)
        self.min_count = min_count

    @functools.cached_property
    def categorical(self) -> list[str]:
        return [f.name for f in self.features if f.kind == "categorical"]

    @functools.cached_property
    def numerical(self) -> list[str]:
        return [f.name for f in self.features if f.kind == "numerical"]

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

    # -- schema ----------------------------------------------------------------------

    def _schema_error(self, missing: list[str], unexpected: list[str], wrong: dict[str, str]):
        parts = []
        if missing:
            parts.append(f"missing features {missing}")
        if unexpected:
            parts.append(f"unexpected features {unexpected}")
        if wrong:
            parts.append(
                "wrong value types " + ", ".join(f"{k} (expected {v})" for k, v in wrong.items())
            )
        return SchemaError(
            "input does not match the model's feature schema: " + "; ".join(parts),
            missing=missing,
            unexpected=unexpected,
            wrong_type=wrong,
        )

    def _expected_names(self) -> list[str]:
        names = getattr(self, "feature_names_in_", None)
        return names if names is not None else [f.name for f in self.features]

    def validate(self, data: FeatureInput) -> pd.DataFrame:
        """A typed frame in feature order: categoricals as text/None, numericals as float.

        DataFrames may carry extra columns (a training table carries targets); request
        records (dicts) may not: an unknown key is almost always a misspelt feature.
        """
        categories, numbers, index = self._typed_columns(data)
        cats = [f.name for f in self.features if f.kind == "categorical"]
        nums = [f.name for f in self.features if f.kind == "numerical"]
        # two blocks + one concat: ~10x faster than a column-by-column frame for one row
        text = np.empty((len(index), len(cats)), dtype=object)
        for j, name in enumerate(cats):
            text[:, j] = categories[name]
        blocks = [pd.DataFrame(text, columns=cats, index=index, dtype=object)]
        if nums:
            values = np.column_stack([numbers[n] for n in nums]) if len(index) else None
            blocks.append(pd.DataFrame(values, columns=nums, index=index, dtype=float))
        frame = pd.concat(blocks, axis=1) if len(blocks) > 1 else blocks[0]
        names = self._expected_names()
        return frame if list(frame.columns) == names else frame[names]

    def _typed_columns(
        self, data: FeatureInput
    ) -> tuple[dict[str, list[str | None]], dict[str, np.ndarray], pd.Index | range]:
        """Categoricals as text lists and numericals as float arrays, types checked."""
        columns, index = self._columns(data)
        categories: dict[str, list[str | None]] = {}
        wrong: dict[str, str] = {}
        for name in self.categorical:
            text = self._categorical_column(columns[name])
            if text is None:
                wrong[name] = "categorical"
            else:
                categories[name] = text
        n = len(index)
        numbers = _plain_numbers(columns, self.numerical, n) if n <= SMALL_BATCH else None
        if numbers is None:
            numbers = {}
            for name in self.numerical:
                values = self._numerical_column(columns[name])
                if values is None:
                    wrong[name] = "numerical"
                else:
                    numbers[name] = values
        if wrong:
            raise self._schema_error([], [], wrong)
        return categories, numbers, index

    def _columns(self, data: FeatureInput) -> tuple[dict[str, Any], pd.Index | range]:
        """The expected columns of ``data`` (lists for a few rows) and its index (records:
        a plain ``range``, which a frame makes its RangeIndex: ~3 us less than building
        one per request)."""
        names = self._expected_names()
        if not isinstance(data, pd.DataFrame):
            records = _as_records(data)
            return self._record_columns(records), range(len(records))
        missing = [n for n in names if n not in data.columns]
        if missing:
            raise self._schema_error(missing, [], {})
        if len(data) > SMALL_BATCH:
            return {n: data[n] for n in names}, data.index
        # plain lists beat per-column pandas for a few rows
        block = data.to_numpy(dtype=object)
        where = data.columns.get_indexer(names)
        return {n: block[:, j].tolist() for n, j in zip(names, where, strict=True)}, data.index

    def _record_columns(self, records: Records) -> dict[str, list[Any]]:
        names = self._expected_names()
        expected = set(names)
        seen: set[str] = set()
        for rec in records:
            seen.update(rec.keys())
        unexpected = sorted(seen - expected)
        # no unexpected key and every record as long as ``names``: then none is missing
        if unexpected or any(len(rec) != len(names) for rec in records):
            missing = [n for n in names if any(n not in rec for rec in records)]
            raise self._schema_error(missing, unexpected, {})
        return {n: [rec[n] for rec in records] for n in names}

    @staticmethod
    def _categorical_column(values: Any) -> list[str | None] | None:
        if isinstance(values, pd.Series) and pd.api.types.is_string_dtype(values.dtype):
            # one conversion to a list, not Arrow's per-element iterator (2 µs a value: 9 of
            # the 12 s a 200k-task encoder fit and transform took); then the one normaliser
            texts = values.to_numpy(dtype=object, na_value=None).tolist()
            return [v if type(v) is str and v else category_text(v) for v in texts]
        out: list[str | None] = []
        for v in values:  # one pass; plain str and None (request JSON) skip the general path
            if type(v) is str:
                out.append(v or None)
            elif v is None:
                out.append(None)
            elif is_category_scalar(v):
                out.append(category_text(v))
            else:
                return None
        return out

    @staticmethod
    def _numerical_column(values: Any) -> np.ndarray | None:
        if isinstance(values, pd.Series) and pd.api.types.is_numeric_dtype(values.dtype):
            return values.to_numpy(dtype=float, na_value=np.nan)
        numbers: list[float] = []
        for v in values:  # one pass; plain float/int (request JSON) skip the general path
            kind = type(v)
            number = float(v) if kind is float or kind is int else number_or_none(v)
            if number is None:
                return None
            numbers.append(number)
        return np.asarray(numbers, dtype=float)

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
        elif n <= SMALL_BATCH:  # many one-value columns: one conversion (1 row, 115: 43 vs 108 µs)
            raw = np.array(columns, dtype=float).T
        else:  # long columns: column_stack (200k x 130: 214 ms vs 513 for the transpose)
            raw = np.column_stack(columns).astype(float, copy=False)
        return EncodedFeatures(codes, self._standardised(raw).astype(np.float32))

    def _codes(self, categories: dict[str, list[str | None]], n: int) -> np.ndarray:
        """(n, categoricals) int64 vocabulary indices. A dict lookup per value beats pandas'
        get_indexer at every size (the text lists are built anyway; a string Index
        converts them first): 1M rows 0.2 s vs 1.6."""
        if n <= SMALL_BATCH:  # one conversion of the rows, as the numericals: 1 row, 14
            # columns ~7 us vs ~11 for an assignment per column. Row-major, as before: the
            # ridges' sums over a row's codes add in the order its layout gives
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


def _plain_numbers(
    columns: Mapping[str, Any], names: Sequence[str], n_rows: int
) -> dict[str, np.ndarray] | None:
    """The numerical columns of a few rows in one array (each column a row view of it),
    where every value is a float, an int or None (NaN), as JSON and the database give
    them; None where any is not, for the checked column-by-column path.

    One pass instead of a call and an array per column: ~0.25 ms less per task for a
    bundle with 100+ history features."""
    values = [v for name in names for v in columns[name]]
    if not all(v is None or type(v) is float or type(v) is int for v in values):
        return None
    block = np.array(values, dtype=float).reshape(len(names), n_rows)
    return dict(zip(names, block, strict=True))


def _as_records(data: Records | Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if isinstance(data, Mapping):
        return [data]
    records = list(data)
    for i, rec in enumerate(records):
        if not isinstance(rec, Mapping):
            raise SchemaError(f"record {i} is a {type(rec).__name__}, expected a mapping")
    return records
