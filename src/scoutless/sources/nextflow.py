"""Nextflow's trace file (``trace.txt``) as a raw instance table (one row per attempt):
`scoutless import nextflow TRACE… --workflow NAME --out TABLE`.

Nextflow writes it tab-separated, with sizes and durations either raw (bytes and
milliseconds, ``trace.raw = true``) or human ("1.2 GB", "3m 2s"); converted copies are
often comma-separated. Only `process`, `realtime` and a memory measure (`rss` or
`peak_rss`) are required; the other columns of ``Settings.sizing.fields`` are taken when
present and the missing ones named: among them the walltime limit (``time``) and the
clock (``submit``, ``complete``: milliseconds since the epoch, raw or as Nextflow's
"2023-01-23 16:08:23.249", read as UTC) that walltime sizing and a protocol in trace time
need. A failed attempt is mapped to the resource it
censors where the trace says so — a kill (exit in `oom_exits`) with ``peak_rss`` near the
request, or a scheduler's OOM code → memory; a run-time limit's code or a ``realtime``
that reached ``time`` → walltime — and is otherwise a failure of unknown cause, never a
memory lower bound."""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from scoutless.config import SizingSettings
from scoutless.sizing.instances import INSTANCE_COLUMNS, workflow_name
from scoutless.sources.common import BadLines, TraceParseError, read_text

#: Nextflow's size units (MemoryUnit: powers of 1024)
_SIZE_UNITS = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4, "PB": 1024**5}
_SIZE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<u>[KMGTP]?B)$", re.IGNORECASE)
#: Nextflow's duration units as its traces (``250ms``, ``1h 2m 3s``) and its configs
#: (``2 hours``) write them: longest spelling first, so ``ms`` is never ``m`` then ``s``
_DURATION_UNITS = {
    "milliseconds": 1.0, "millisecond": 1.0, "millis": 1.0, "milli": 1.0, "ms": 1.0,
    "minutes": 60e3, "minute": 60e3, "mins": 60e3, "min": 60e3, "m": 60e3,
    "seconds": 1e3, "second": 1e3, "secs": 1e3, "sec": 1e3, "s": 1e3,
    "hours": 3600e3, "hour": 3600e3, "h": 3600e3, "days": 86400e3, "day": 86400e3, "d": 86400e3,
}  # fmt: skip
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(" + "|".join(_DURATION_UNITS) + ")")
#: columns read as sizes (bytes) and as durations (ms); the rest numeric or text
SIZE_COLUMNS = frozenset({"rss", "peak_rss", "vmem", "peak_vmem", "memory", "rchar", "wchar",
                          "read_bytes", "write_bytes", "disk"})  # fmt: skip
DURATION_COLUMNS = frozenset({"realtime", "duration", "time"})
TIMESTAMP_COLUMNS = frozenset({"submit", "start", "complete"})
#: taken whenever the trace has them, whatever ``fields`` says, and not named when it has
#: not (a trace without them still sizes memory): the walltime limit and the clock
CLOCK_COLUMNS: tuple[str, ...] = ("time", "submit", "complete")
TEXT_COLUMNS = frozenset({"process", "status", "name", "tag", "hash"})
MISSING = frozenset({"", "-", "null", "NA"})


def _plain(text: str) -> tuple[str, float | None]:
    """The stripped text and its value when it is missing (NaN) or a raw number."""
    s = text.strip()
    if s in MISSING:
        return s, math.nan
    try:
        return s, float(s)
    except ValueError:
        return s, None


def parse_size(text: str) -> float:
    """Bytes in a Nextflow size: raw bytes ("1288490188") or "1.2 GB"; NaN for "-".

    Raises ValueError naming the text otherwise."""
    s, value = _plain(text)
    if value is not None:
        return value
    m = _SIZE.match(s)
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return float(m["n"]) * _SIZE_UNITS[m["u"].upper()]


def parse_duration(text: str) -> float:
    """Milliseconds in a Nextflow duration: raw ms ("182000") or "3m 2s", "1h 5m", "250ms",
    "1d 2h", "2 hours" (any case).

    Raises ValueError naming the text otherwise."""
    s, value = _plain(text)
    if value is not None:
        return value
    s = s.lower()
    parts = _DURATION_PART.findall(s)
    if not parts or _DURATION_PART.sub("", s).strip():
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)


def parse_timestamp(text: str) -> float:
    """Milliseconds since the epoch in a Nextflow timestamp: raw ("1674490103249") or
    "2023-01-23 16:08:23.249" (ISO 8601; without a zone read as UTC).

    Raises ValueError naming the text otherwise."""
    s, value = _plain(text)
    if value is not None:
        return value
    try:
        stamp = datetime.fromisoformat(s)
    except ValueError:
        raise ValueError(f"not a timestamp: {text!r}") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return round(stamp.timestamp() * 1000.0, 3)


def parse_number(text: str) -> float:
    s = text.strip().removesuffix("%")
    return math.nan if s in MISSING else float(s)


def _parser(column: str):
    if column in SIZE_COLUMNS:
        return parse_size
    if column in DURATION_COLUMNS:
        return parse_duration
    if column in TIMESTAMP_COLUMNS:
        return parse_timestamp
    return str if column in TEXT_COLUMNS else parse_number


@dataclass
class NextflowTrace:
    """An imported trace: the instance table, the columns it lacked, the rows skipped."""

    frame: pd.DataFrame
    missing: list[str] = field(default_factory=list)
    bad_lines: list[TraceParseError] = field(default_factory=list)


def _header(lines: list[str], source: str) -> tuple[list[str], str]:
    if not lines:
        raise TraceParseError("empty trace (no header line)", source=source, line=1)
    delim = "\t" if "\t" in lines[0] else ","
    header = [h.strip() for h in next(csv.reader(lines[:1], delimiter=delim))]
    lacking = [c for c in ("process", "realtime") if c not in header]
    if not {"rss", "peak_rss"} & set(header):
        lacking.append("rss or peak_rss")
    if lacking:
        raise TraceParseError(
            f"not a Nextflow trace: lacks column(s) {', '.join(lacking)}", source=source, line=1
        )
    return header, delim


def _rows(text: str, source: str, fields: list[str], bad: BadLines) -> tuple[list[dict], list[str]]:
    """Parsed rows (the taken columns) and the fields the header lacks."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    header, delim = _header(lines, source)
    taken = [c for c in fields if c in header]
    where = {c: header.index(c) for c in taken}
    parsers = {c: _parser(c) for c in taken}
    rows = []
    reader = csv.reader(lines[1:], delimiter=delim)
    for lineno, raw in enumerate(reader, start=2):
        if len(raw) != len(header):
            bad.report(TraceParseError(
                f"{len(raw)} fields where the header has {len(header)}", source=source, line=lineno
            ))  # fmt: skip
            continue
        try:
            rows.append({c: parsers[c](raw[where[c]]) for c in taken})
        except ValueError as exc:
            col = next(c for c in taken if _fails(parsers[c], raw[where[c]]))
            bad.report(TraceParseError(f"column {col}: {exc}", source=source, line=lineno))
    return rows, [c for c in fields if c not in header]


def _fails(parser, text: str) -> bool:
    try:
        parser(text)
    except ValueError:
        return True
    return False


def censors(frame: pd.DataFrame, settings: SizingSettings) -> pd.Series:
    """What each attempt's failure censors: "" (completed), memory, walltime or unknown."""
    status = frame["status"].fillna("").astype(str).str.upper()
    exit_code = frame["exit"]
    failed = status.isin(["FAILED", "ABORTED"]) | (exit_code.notna() & (exit_code != 0))
    near = frame["peak_rss"] >= settings.oom_near_share * frame["memory"]
    memory = exit_code.isin(settings.scheduler_oom_exits) | (
        exit_code.isin(settings.oom_exits) & near
    )
    limit = frame["time"] if "time" in frame else pd.Series(np.nan, index=frame.index)
    walltime = exit_code.isin(settings.walltime_exits) | (frame["realtime"] >= limit)
    out = np.select([~failed, memory, walltime], ["", "memory", "walltime"], default="unknown")
    return pd.Series(out, index=frame.index, dtype="string")


def read_nextflow(
    paths: list[str | Path],
    workflow: str | None = None,
    *,
    skip_bad: bool = False,
    settings: SizingSettings,
) -> NextflowTrace:
    """Nextflow trace file(s) as one instance table (`INSTANCE_COLUMNS`), in file order.

    ``workflow`` names every row (default: each file's stem without ``trace_``). Raises
    TraceParseError naming the file and line of the first malformed row (``skip_bad``:
    skip such rows and list them) or of a header without the required columns."""
    fields = list(dict.fromkeys([*settings.fields, *CLOCK_COLUMNS]))
    bad, frames, missing = BadLines(skip=skip_bad), [], []
    for path in paths:
        rows, absent = _rows(read_text(path), str(path), fields, bad)
        frame = pd.DataFrame(rows, columns=[c for c in fields if c not in absent])
        frame["workflow"] = workflow or workflow_name(path)
        frames.append(frame)
        missing += [c for c in absent if c not in CLOCK_COLUMNS and c not in missing]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    for col in INSTANCE_COLUMNS:
        if col not in frame:
            frame[col] = 1.0 if col == "attempt" else np.nan
    if frame["rss"].isna().all() and "peak_rss" in frame:
        frame["rss"] = frame["peak_rss"]
    frame["censors"] = censors(frame, settings)
    frame["process"] = frame["process"].astype("string")
    frame["status"] = frame["status"].astype("string")
    return NextflowTrace(frame[list(INSTANCE_COLUMNS)], missing, list(bad.errors))
