"""Where a task lies outside what the model was trained on: each numerical feature's range
over the training rows, and the tasks with a value beyond it.

The fitted encoder keeps the range (``encoder.json``'s ``range``; a bundle written before
it has none and flags nothing). A served task with a value outside it is answered (the
answer is bounded by what the site can allocate, ``allocation.bounds``) and flagged
``outside_training`` with the features and their values: the models extrapolate there.
The comparison runs on the encoded matrix the models read, against the range's bounds
encoded the same way (the encoding is monotone), two comparisons for a whole request.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: the flag's kind and what it says
OUTSIDE_TRAINING = "outside_training"
OUTSIDE_MESSAGE = "values outside the training range: the answer extrapolates"


@dataclass(frozen=True)
class TrainingRange:
    """Per numerical feature, the least and the largest finite value in training (NaN:
    none was finite)."""

    low: dict[str, float]
    high: dict[str, float]

    @classmethod
    def of(cls, columns: Mapping[str, np.ndarray]) -> TrainingRange:
        low, high = {}, {}
        for name, values in columns.items():
            finite = values[np.isfinite(values)]
            low[name] = float(finite.min()) if finite.size else math.nan
            high[name] = float(finite.max()) if finite.size else math.nan
        return cls(low, high)

    def to_dict(self) -> dict[str, dict[str, float | None]]:
        def plain(d: dict[str, float]) -> dict[str, float | None]:
            return {k: (v if math.isfinite(v) else None) for k, v in d.items()}

        return {"low": plain(self.low), "high": plain(self.high)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> TrainingRange | None:
        """The range as saved; None for an encoder saved without one."""
        if not d:
            return None
        def read(part: Mapping[str, Any]) -> dict[str, float]:
            return {k: math.nan if v is None else float(v) for k, v in part.items()}

        return cls(read(d["low"]), read(d["high"]))

    def encoded(
        self, names: Sequence[str], encode: Callable[[np.ndarray], np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(k,) the lower and upper bounds of ``names`` through ``encode`` (the encoder's
        transform of a (1, k) row); a feature without a range is never outside."""
        low = np.array([[self.low.get(n, math.nan) for n in names]], dtype=float)
        high = np.array([[self.high.get(n, math.nan) for n in names]], dtype=float)
        low_enc, high_enc = encode(low)[0], encode(high)[0]
        return (
            np.where(np.isnan(low_enc), -np.inf, low_enc).astype(np.float32),
            np.where(np.isnan(high_enc), np.inf, high_enc).astype(np.float32),
        )


def outside_rows(
    numeric: np.ndarray,
    bounds: tuple[np.ndarray, np.ndarray],
    names: Sequence[str],
    numbers: Mapping[str, np.ndarray],
) -> dict[int, dict[str, float]]:
    """Per row with a value outside the range, feature → its value (``numeric``: the
    encoded (n, k) matrix; ``numbers``: the typed values by name)."""
    low, high = bounds
    beyond = (numeric < low) | (numeric > high)
    if not beyond.any():
        return {}
    out: dict[int, dict[str, float]] = {}
    rows, columns = np.nonzero(beyond)
    for row, column in zip(rows.tolist(), columns.tolist(), strict=True):
        out.setdefault(row, {})[names[column]] = float(numbers[names[column]][row])
    return out


def outside_flag(values: dict[str, float]) -> dict[str, Any]:
    """The answer's flag of a task with ``values`` outside the training range."""
    return {"kind": OUTSIDE_TRAINING, "features": values, "msg": OUTSIDE_MESSAGE}
