"""The raw instance table: one row per attempt of a task instance, what `scoutless import
nextflow` writes and what the sizing protocol reads. Units: bytes and milliseconds
(``submit`` and ``complete``: milliseconds since the epoch; ``time``: the walltime limit)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd

from scoutless.sources.common import (
    BadLines,
    TraceParseError,
    finite_numbers,
    past_float_range,
    read_text,
)

#: the instance table's columns, in order (``attempt`` counts from 1)
INSTANCE_COLUMNS: tuple[str, ...] = (
    "workflow", "process", "cpus", "rchar", "rss", "peak_rss", "memory", "time", "realtime",
    "submit", "complete", "status", "exit", "attempt", "censors",
)  # fmt: skip
#: what a failed attempt's ``censors`` column may say ("" for an attempt that completed)
CENSORS: tuple[str, ...] = ("memory", "walltime", "unknown")
#: numeric columns, read as numbers: a cell that is neither a number nor `NOT_RECORDED` is
#: a malformed row (`read_instances`); ``input_size`` too, where the table has it
NUMERIC_COLUMNS: tuple[str, ...] = (
    "cpus", "rchar", "rss", "peak_rss", "memory", "time", "realtime", "submit", "complete",
    "exit", "attempt", "input_size",
)  # fmt: skip
#: what a cell may hold for "not recorded": pandas' missing values (an empty cell, ``NaN``,
#: ``NULL`` …) and Nextflow's ``-``
NOT_RECORDED = frozenset({
    "", "-", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
    "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
})  # fmt: skip
#: the protocol's features options: where an instance's input size comes from —
#: ``submission``, what is known at release (an ``input_size`` column; a Nextflow trace
#: has none), or ``peers-rchar``, the bytes read during the run (the peers' regressions')
FEATURES: dict[str, str] = {"submission": "input_size", "peers-rchar": "rchar"}


def input_size_column(features: str) -> str:
    """The instance table's column an instance's input size is read from under the
    ``features`` option. Raises ValueError naming the options."""
    if features not in FEATURES:
        raise ValueError(f"unknown features {features!r}; expected one of {', '.join(FEATURES)}")
    return FEATURES[features]


def read_instances(path: str | Path, bad: BadLines | None = None) -> pd.DataFrame:
    """An instance table from Parquet (``.parquet``) or CSV (gzipped or not), the
    `NUMERIC_COLUMNS` as numbers.

    A malformed row — a CSV row with more or fewer fields than the header, a numeric
    cell that is neither a number nor `NOT_RECORDED` — raises `TraceParseError` naming
    the file, the line (a Parquet file: the row) and the column, the first in the file's
    order; with ``bad`` skipping (``BadLines(skip=True)``) every such row is left out and
    its error kept in ``bad``, for the caller to report. Raises ValueError naming the file
    when it does not exist or a required column (`process`, `rss`, `realtime`) is missing.
    """
    path = Path(path)
    bad = bad if bad is not None else BadLines()
    if not path.exists():
        raise ValueError(f"{path}: no such instance table")
    if path.suffix == ".parquet":
        frame, lines, errors = pd.read_parquet(path), None, []
    else:
        frame, lines, errors = _read_csv(path)
    missing = [c for c in ("process", "rss", "realtime") if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: instance table lacks column(s) {', '.join(missing)}")
    frame, unreadable = _numbers(frame, lines, str(path))
    for _, error in sorted(errors + unreadable, key=lambda e: e[0]):
        bad.report(error)
    if "workflow" not in frame.columns:
        frame["workflow"] = path.stem.removeprefix("trace_")
    return frame


#: a malformed row's error with its place in the file's order
Malformed = tuple[int, TraceParseError]


def _read_csv(path: Path) -> tuple[pd.DataFrame, list[int], list[Malformed]]:
    """A CSV table's rows (`NOT_RECORDED` cells as NaN), each row's line, and the rows
    whose field count differs from the header's (left out); blank lines passed over."""
    text = read_text(path)
    fast = _one_row_a_line(text)
    if fast is not None:
        return fast, list(range(2, len(fast) + 2)), []
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header:
        raise ValueError(f"{path}: empty instance table (no header line)")
    rows, lines, errors = [], [], []
    for row in reader:
        if not row:
            continue
        if len(row) != len(header):
            message = f"{len(row)} fields where the header has {len(header)}"
            errors.append(
                (reader.line_num, TraceParseError(message, source=str(path), line=reader.line_num))
            )
            continue
        rows.append(row)
        lines.append(reader.line_num)
    frame = pd.DataFrame(rows, columns=header, dtype=object)
    return frame.where(~frame.isin(NOT_RECORDED), np.nan), lines, errors


def _one_row_a_line(text: str) -> pd.DataFrame | None:
    """pandas' C reader where every row is one line with the header's field count (no
    quote, no blank line: row i is line i + 2), about five times faster than the csv
    module's rows; None where a line must be found by the exact reader."""
    lines = text.splitlines()
    if not lines or '"' in text:
        return None
    fields = lines[0].count(",")
    if not lines[0] or any(not line or line.count(",") != fields for line in lines[1:]):
        return None
    return pd.read_csv(io.StringIO(text), low_memory=False, keep_default_na=False,
                       na_values=sorted(NOT_RECORDED))  # fmt: skip


def _numbers(
    frame: pd.DataFrame, lines: list[int] | None, source: str
) -> tuple[pd.DataFrame, list[Malformed]]:
    """``frame`` with its `NUMERIC_COLUMNS` as numbers, less the rows with a cell that is
    none (nor `NOT_RECORDED`), and one error per such row (its leftmost such cell);
    ``lines``: each row's line in the file (None: a Parquet file's rows, named by index)."""
    wrong = np.zeros(len(frame), dtype=bool)
    errors: list[Malformed] = []
    for col in [c for c in frame.columns if c in NUMERIC_COLUMNS]:  # the file's order
        raw = frame[col]
        if pd.api.types.is_numeric_dtype(raw):  # read as numbers already: only infinities
            number = raw
            unreadable = np.isinf(raw.to_numpy(float))
        else:
            number = finite_numbers(raw)
            text = raw.astype("string").str.strip()
            unreadable = (number.isna() & raw.notna() & ~text.isin(NOT_RECORDED)).to_numpy(bool)
        for i in np.flatnonzero(unreadable & ~wrong):
            cell = raw.iloc[i]
            said = "past a float's range" if past_float_range(cell) else "not a number"
            what = f"column {col}: {str(cell)[:40]!r} is {said}"
            line = lines[i] if lines is not None else None
            place = int(i) if line is None else line
            what = what if line is not None else f"row {i}: {what}"
            errors.append((place, TraceParseError(what, source=source, line=line)))
        wrong |= unreadable
        frame[col] = number  # a row with an unreadable cell leaves below
    return (frame[~wrong].reset_index(drop=True) if wrong.any() else frame), errors


def workflow_name(path: str | Path) -> str:
    """A workflow's default name: the file's stem without a leading ``trace_``."""
    name = Path(path).name
    for suffix in (".gz", ".parquet", ".csv", ".tsv", ".txt"):
        name = name.removesuffix(suffix)
    return name.removeprefix("trace_")
