"""The feature schema an encoder was fitted on, and input checked against it: a frame or
request records in, typed columns out (categoricals as text or None, numericals as float),
or a :class:`SchemaError` that names the missing, unexpected and wrongly typed features.

DataFrames may carry extra columns (a training table carries targets); request records
may not: an unknown key is almost always a misspelt feature.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from scoutless.fast_paths import current
from scoutless.features.normalise import category_text, is_category_scalar, number_or_none
from scoutless.features.spec import FeatureSpec


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


Records = Sequence[Mapping[str, Any]]
FeatureInput = pd.DataFrame | Records | Mapping[str, Any]


class FeatureSchema:
    """The features input must hold and their kinds; :meth:`validate` checks input against
    them (:class:`~scoutless.features.encoders.FeatureEncoder` is one, fitted)."""

    def __init__(self, features: Sequence[FeatureSpec]) -> None:
        self.features = list(features)

    @functools.cached_property
    def categorical(self) -> list[str]:
        return [f.name for f in self.features if f.kind == "categorical"]

    @functools.cached_property
    def numerical(self) -> list[str]:
        return [f.name for f in self.features if f.kind == "numerical"]

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
        # two blocks + one concat: a frame built column by column pays pandas' per-column cost
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
        numbers = _plain_numbers(columns, self.numerical, n) if n <= current().rows else None
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
        a plain ``range``, which a frame makes its RangeIndex: cheaper than building one per
        request)."""
        names = self._expected_names()
        if not isinstance(data, pd.DataFrame):
            records = _as_records(data)
            return self._record_columns(records), range(len(records))
        missing = [n for n in names if n not in data.columns]
        if missing:
            raise self._schema_error(missing, [], {})
        if len(data) > current().rows:
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
            # one conversion to a list, not Arrow's per-element iterator (a Python object
            # per value, most of a large fit's encoding); then the one normaliser
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


def _plain_numbers(
    columns: Mapping[str, Any], names: Sequence[str], n_rows: int
) -> dict[str, np.ndarray] | None:
    """The numerical columns of a few rows in one array (each column a row view of it),
    where every value is a float, an int or None (NaN), as JSON and the database give
    them; None where any is not, for the checked column-by-column path.

    One pass instead of a call and an array per column: a bundle with a hundred history
    features would pay a hundred calls per task."""
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
