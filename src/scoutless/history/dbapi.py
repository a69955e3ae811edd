"""DataFrame columns as the plain Python values a DBAPI driver binds, fast.

Bulk writes (the generator, imports, the prediction log) spend most of their time turning
numpy columns into Python objects; each dtype here takes the cheapest exact path: ``tolist``
and a patch of the missing positions instead of ``astype(object).where(...)``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd


def dbapi_rows(frame: pd.DataFrame, *, datetime_text: bool) -> Iterator[tuple]:
    """Row tuples of plain Python values (None for missing). ``datetime_text``: datetimes
    as SQLAlchemy stores them in SQLite (``YYYY-MM-DD HH:MM:SS.ffffff``), else ``datetime``."""
    columns = [dbapi_column(frame[name], datetime_text=datetime_text) for name in frame.columns]
    return zip(*columns, strict=True)


def dbapi_column(col: pd.Series, *, datetime_text: bool) -> list:
    """One column as a list of plain Python values, None where missing."""
    dtype = col.dtype
    if pd.api.types.is_datetime64_any_dtype(dtype):
        if getattr(dtype, "tz", None) is not None:
            col = col.dt.tz_convert(None)
        values = col.to_numpy(dtype="datetime64[us]")
        if datetime_text:
            return sqlite_datetime_text(values)
        return _patch(values.astype(object).tolist(), np.isnat(values))
    if isinstance(dtype, np.dtype):
        values = col.to_numpy()
        if dtype.kind in "iub":
            return values.tolist()
        if dtype.kind == "f":
            return _patch(values.tolist(), np.isnan(values))
        if dtype.kind == "O":
            return _patch(values.tolist(), pd.isna(values))
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and dtype.kind in "iub":
        mask = col.isna().to_numpy()
        filled = col.to_numpy(dtype=dtype.numpy_dtype, na_value=0)
        return _patch(filled.tolist(), mask)
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and dtype.kind == "f":
        mask = col.isna().to_numpy()
        return _patch(col.to_numpy(dtype=np.float64, na_value=np.nan).tolist(), mask)
    return col.to_numpy(dtype=object, na_value=None).tolist()


def _patch(values: list, missing: np.ndarray) -> list:
    for i in np.flatnonzero(missing).tolist():
        values[i] = None
    return values


def sqlite_datetime_text(values: np.ndarray) -> list:
    """``datetime64[us]`` values as SQLite datetime text, None for NaT."""
    text = np.datetime_as_string(values, unit="us").astype("U26")
    text.view(np.uint32).reshape(-1, 26)[:, 10] = ord(" ")  # ISO 'T' -> ' '
    return _patch(text.astype(object).tolist(), np.isnat(values))
