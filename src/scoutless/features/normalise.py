"""Raw value → feature value: the one place a category becomes text and a number a float.

Every path that produces features calls these two functions: the training table built
from a history (where an integer column with one NULL is read as float, so 5 arrives as
5.0), a task fetched alone from the database (5 as int), posted taskparams (5 from JSON)
and posted feature dicts. Because all of them agree here, the same task always gets the
same category text ("5") and the same float, bit for bit.
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import numpy as np
import pandas as pd


def category_text(value: Any) -> str | None:
    """One categorical value as text; None for missing or empty. Integral floats lose '.0'."""
    if value is None or value is pd.NA:
        return None
    kind = type(value)
    if kind is str:
        return value or None
    if kind is float or isinstance(value, np.floating):
        number = float(value)
        if math.isnan(number):
            return None
        return str(int(number)) if number.is_integer() else str(number)
    if isinstance(value, np.integer | np.bool_):
        return str(value.item())
    if value is pd.NaT:
        return None
    text = str(value)
    return text or None


def is_category_scalar(value: Any) -> bool:
    """Whether a value may stand for a category (not a list, mapping or other structure)."""
    return value is None or value is pd.NA or isinstance(value, str | Number | bool | np.generic)


def number_or_none(value: Any) -> float | None:
    """A numerical value as float (NaN for missing); None when it is not a number at all."""
    kind = type(value)
    if kind is float or kind is int:
        return float(value)
    if value is None or value is pd.NA:
        return math.nan
    if isinstance(value, bool | np.bool_):
        return float(value)
    if isinstance(value, Number | np.number):
        return float(value)  # type: ignore[arg-type]
    if isinstance(value, str):
        try:
            return float(value) if value.strip() else math.nan
        except ValueError:
            return None
    return None


def number(value: Any) -> float:
    """A numerical value as float; NaN for missing and for what is not a number."""
    converted = number_or_none(value)
    return math.nan if converted is None else converted
