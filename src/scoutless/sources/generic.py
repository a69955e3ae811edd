"""Any CSV or Parquet job table, described by a small TOML mapping file::

    [columns]
    id = "job_id"                # optional: a stable integer id (default: row number)
    submit_time = "submitted"    # required: epoch seconds or ISO-8601 text
    end_time = "ended"           # optional: with user, enables last-2 and history features
    user = "user"                # optional

    [features]                   # submission-time columns only
    categorical = ["user", "queue"]
    numerical = ["req_cpus"]

    [targets.walltime]           # memory / cputime / io / walltime
    column = "runtime_s"
    unit = "s"
    scale = 1.0                  # value × scale is in ``unit``
    request = "req_time_s"       # optional: the user's request, same scale

One row is one task. Rows whose target or numerical feature cells hold text that is not a
number, or whose times do not parse (or have no submit time), are bad lines.
"""

from __future__ import annotations

import csv
import io
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoutless.features.spec import FeatureSpec
from scoutless.sources.assemble import TraceJobs, request_col
from scoutless.sources.common import (
    BadLines,
    TraceParseError,
    finite_numbers,
    read_text,
    refused_number,
)
from scoutless.targets.spec import TARGET_NAMES


def read_mapping(path: str | Path) -> dict[str, Any]:
    """A mapping TOML file as a dict; errors name the file."""
    try:
        return tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as exc:
        raise TraceParseError(f"not valid TOML: {exc}", source=str(path)) from exc
    except OSError as exc:
        raise TraceParseError(f"cannot read mapping: {exc}", source=str(path)) from exc


def parse_csv_text(
    text: str, *, source: str = "<text>", skip_bad: bool = False
) -> tuple[pd.DataFrame, list[int], list[TraceParseError]]:
    """Cells as text, the file line of each row, and the malformed lines."""
    bad = BadLines(skip=skip_bad)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    header: list[str] | None = None
    rows, lines = [], []
    try:
        for fields in reader:
            if not any(f.strip() for f in fields):
                continue
            if header is None:
                header = [f.strip() for f in fields]
                continue
            if len(fields) != len(header):
                bad.report(
                    TraceParseError(
                        f"expected {len(header)} fields, got {len(fields)}",
                        source=source,
                        line=reader.line_num,
                    )
                )
                continue
            rows.append(fields)
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise TraceParseError(f"malformed CSV: {exc}", source=source, line=reader.line_num) from exc
    if header is None:
        raise TraceParseError("no header line", source=source)
    if len(set(header)) != len(header):
        raise TraceParseError(f"duplicate column names in {header[:10]}", source=source, line=1)
    return pd.DataFrame(rows, columns=header, dtype=object), lines, bad.errors


def read_table(
    path: str | Path, *, skip_bad: bool = False
) -> tuple[pd.DataFrame, list[int], list[TraceParseError]]:
    """A CSV (gzip or plain) or Parquet file; Parquet rows are numbered from 1."""
    path = Path(path)
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises many types for a broken file
            raise TraceParseError(f"not a readable Parquet file: {exc}", source=str(path)) from exc
        return frame, list(range(1, len(frame) + 1)), []
    return parse_csv_text(read_text(path), source=str(path), skip_bad=skip_bad)


def _column(frame: pd.DataFrame, name: str, what: str, source: str) -> pd.Series:
    if name not in frame.columns:
        raise TraceParseError(
            f"mapping names {what} column {name!r}, not in {list(frame.columns)[:12]}",
            source=source,
        )
    return frame[name]


def _times(values: pd.Series) -> pd.Series:
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.notna().sum() >= values.notna().sum() * 0.9 and numeric.notna().any():
        return pd.to_datetime(numeric.where(numeric.abs() < 4e9), unit="s", utc=True)
    return pd.to_datetime(values, errors="coerce", utc=True, format="mixed")


#: the mapped time columns: mapping key, the jobs' column, what a cell must be
TIMES = (
    ("submit_time", "creationdate", "a submit time (epoch seconds or ISO-8601)"),
    ("end_time", "finished_at", "an end time (epoch seconds or ISO-8601)"),
)


def _unreadable(
    raw: pd.Series,
    parsed: pd.Series,
    name: str,
    what: str,
    found: BadLines,
    lines: list[int],
    source: str,
    required: bool = False,
) -> np.ndarray:
    """The rows whose cell of column ``name`` holds text that did not parse as ``what``
    (``required``: or nothing at all), each reported to ``found``."""
    text = raw.astype("string").str.strip()
    given = (raw.notna() & text.ne("").fillna(False)).to_numpy(bool)
    wrong = parsed.isna().to_numpy(bool) & (given | required)
    for i in np.flatnonzero(wrong):
        said = refused_number(raw.iloc[i], what) if given[i] else f"empty; a row needs {what}"
        found.report(TraceParseError(f"column {name!r}: {said}", source=source, line=lines[i]))
    return wrong


def _target_columns(
    frame: pd.DataFrame,
    targets: dict[str, Any],
    keep: np.ndarray,
    bad: BadLines,
    lines: list[int],
    source: str,
) -> tuple[dict[str, Any], dict[str, str]]:
    """``{t}_value`` / ``{t}_request`` columns (scaled) and units; rows with a value that is
    not a number are reported to ``bad`` and cleared in ``keep``."""
    out: dict[str, Any] = {}
    units: dict[str, str] = {}
    for t, spec in targets.items():
        if "column" not in spec:
            raise TraceParseError(f"mapping [targets.{t}] needs column", source=source)
        scale = float(spec.get("scale", 1.0))
        for key, name in (("value", spec["column"]), ("request", spec.get("request"))):
            if name is None:
                continue
            raw = _column(frame, name, f"target {t} {key}", source)
            values = finite_numbers(finite_numbers(raw) * scale)  # scaled past range: refused
            wrong = values.isna() & raw.notna() & raw.astype(str).str.strip().ne("")
            for i in np.flatnonzero(wrong.to_numpy() & keep):
                said = refused_number(raw.iloc[i], "a number")
                bad.report(
                    TraceParseError(f"column {name!r}: {said}", source=source, line=lines[i])
                )
                keep[i] = False
            out[f"{t}_value" if key == "value" else request_col(t)] = values
        units[t] = str(spec.get("unit", ""))
    return out, units


def _ids(frame: pd.DataFrame, columns: dict[str, Any], source: str) -> np.ndarray:
    """The mapped id column (unique integers), or 1..n."""
    if "id" in columns:
        ids = finite_numbers(_column(frame, columns["id"], "id", source))
        if ids.isna().any() or (ids % 1 != 0).any() or not ids.is_unique:
            raise TraceParseError(
                f"id column {columns['id']!r} must hold unique integers", source=source
            )
        return ids.astype(np.int64).to_numpy()
    return np.arange(1, len(frame) + 1, dtype=np.int64)


def _add_features(
    jobs: pd.DataFrame, frame: pd.DataFrame, feats: dict[str, Any], source: str,
    found: BadLines, lines: list[int],
) -> tuple[list[FeatureSpec], np.ndarray]:  # fmt: skip
    """The mapped feature columns, typed, added to ``jobs``; their specs, and the rows
    whose numerical feature holds text that is not a number (reported to ``found``; an
    empty cell is a missing value)."""
    specs = [FeatureSpec(c, "categorical", f"{source}:{c}") for c in feats.get("categorical", [])]
    specs += [FeatureSpec(c, "numerical", f"{source}:{c}") for c in feats.get("numerical", [])]
    wrong = np.zeros(len(frame), dtype=bool)
    for spec in specs:
        raw = _column(frame, spec.name, "feature", source)
        if spec.kind == "categorical":
            jobs[spec.name] = raw.astype("string")
        else:
            jobs[spec.name] = finite_numbers(raw)
            wrong |= _unreadable(raw, jobs[spec.name], spec.name, "a number", found, lines, source)
    return specs, wrong


def generic_jobs(
    frame: pd.DataFrame,
    mapping: dict[str, Any],
    *,
    lines: list[int] | None = None,
    bad_lines: list[TraceParseError] | None = None,
    source: str = "<table>",
    skip_bad: bool = False,
) -> TraceJobs:
    """Normalise a table by its mapping (see the module docstring)."""
    bad = BadLines(skip=skip_bad, errors=list(bad_lines or []))
    lines = lines or list(range(1, len(frame) + 1))
    columns = mapping.get("columns", {})
    targets = mapping.get("targets", {})
    if "submit_time" not in columns:
        raise TraceParseError("mapping needs [columns] submit_time", source=source)
    unknown = sorted(set(targets) - set(TARGET_NAMES))
    if not targets or unknown:
        raise TraceParseError(
            f"mapping [targets.*] must name some of {TARGET_NAMES} (unknown: {unknown})",
            source=source,
        )
    keep = np.ones(len(frame), dtype=bool)
    found = BadLines(skip=True)  # every malformed row, reported to ``bad`` in line order
    out, units = _target_columns(frame, targets, keep, found, lines, source)
    jobs = pd.DataFrame(out, index=frame.index)
    jobs["jeditaskid"] = _ids(frame, columns, source)
    for key, col, what in TIMES:
        if key in columns:
            raw = _column(frame, columns[key], key, source)
            jobs[col] = _times(raw)
            keep &= ~_unreadable(raw, jobs[col], columns[key], what, found, lines, source,
                                 required=key == "submit_time")  # fmt: skip
    if "user" in columns:
        jobs["user"] = _column(frame, columns["user"], "user", source).astype("string")
    specs, wrong = _add_features(jobs, frame, mapping.get("features", {}), source, found, lines)
    for error in _first_per_line(found.errors):
        bad.report(error)
    jobs = jobs[keep & ~wrong]
    info = {"format": "table", "mapping": mapping}
    return TraceJobs(jobs.reset_index(drop=True), specs, units, "table", info, bad.errors)


def _first_per_line(errors: list[TraceParseError]) -> list[TraceParseError]:
    """One error per malformed row (its first found), in line order."""
    first: dict[int, TraceParseError] = {}
    for error in errors:
        first.setdefault(error.line or 0, error)
    return [first[line] for line in sorted(first)]
