"""What a fitted encoder yields: the rows' model arrays (:class:`EncodedFeatures`) and,
for the service, one validation pass's arrays, typed values and unknown categories
(:class:`InspectedFeatures`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


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

        Column by column (one ``tolist`` per numerical) rather than element by element: a
        Python float per value made by one C loop, not one numpy scalar each."""
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
    cost, the categories never: what no policy reads is never copied)."""

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
