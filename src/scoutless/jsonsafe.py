"""Numbers strict JSON can hold: one spelling of NaN and infinity for every file we write.

NaN (a figure without rows) becomes ``null``; ±inf (an open bin edge) the strings
``"inf"`` / ``"-inf"``, which ``float()`` reads back, so :meth:`TargetBins.from_dict` and
``json.loads`` round-trip what :meth:`TargetBins.to_dict` and ``metrics.json`` hold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def json_number(x: float | None) -> float | str | None:
    """A float JSON can hold: NaN/None -> None, ±inf -> "inf"/"-inf"."""
    if x is None:
        return None
    x = float(x)
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def json_edges(edges: Sequence[float]) -> list[float | str | None]:
    return [json_number(e) for e in edges]


def jsonable(obj: Any) -> Any:
    """Replace NaN by None and ±inf by "inf"/"-inf" anywhere in a nested structure."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, bool | int | str) or obj is None:
        return obj
    if isinstance(obj, float | np.floating):
        return json_number(float(obj))
    if isinstance(obj, np.integer):
        return int(obj)
    raise TypeError(f"a {type(obj).__name__} that JSON cannot store: {obj!r}")
