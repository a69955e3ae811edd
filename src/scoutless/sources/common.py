"""What every trace adapter shares: the parse error with its place, gzip-transparent
reading, bad-line bookkeeping and the unit parsers of batch systems (Slurm durations and
memory sizes)."""

from __future__ import annotations

import gzip
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

GZIP_MAGIC = b"\x1f\x8b"


class TraceParseError(ValueError):
    """A trace that cannot be read: names the file, the line (1-based) and what was expected.

    ``skippable``: the error is one malformed row, which ``skip_bad`` would have skipped
    (set by :class:`BadLines`); a missing column or an empty file is not."""

    def __init__(self, message: str, *, source: str = "<text>", line: int | None = None):
        self.message = message
        self.source = source
        self.line = line
        self.skippable = False
        place = f"{source}:{line}" if line is not None else source
        super().__init__(f"{place}: {message}")


@dataclass
class BadLines:
    """Collects malformed lines: fail on the first one, or (``skip``) remember and go on."""

    skip: bool = False
    errors: list[TraceParseError] = field(default_factory=list)

    def report(self, error: TraceParseError) -> None:
        error.skippable = True  # a row the reader could skip and go on
        if not self.skip:
            raise error
        self.errors.append(error)

    def __len__(self) -> int:
        return len(self.errors)


def finite_numbers(raw: pd.Series) -> pd.Series:
    """The cells as numbers, missing where they do not parse or lie past a float's range
    (``inf``, ``1e400``): a job's value is finite, and an infinity spoils every quantile."""
    values = pd.to_numeric(raw, errors="coerce")
    return values.where(np.isfinite(values.to_numpy(float)))


def past_float_range(cell: object) -> bool:
    """Whether ``cell`` reads as a number only a float's infinity holds (``inf``, ``1e400``)."""
    number = pd.to_numeric(pd.Series([cell]), errors="coerce").iloc[0]
    return bool(np.isinf(number))


def refused_number(cell: object, what: str = "a number") -> str:
    """Why a given cell was refused: not ``what``, or a number past a float's range."""
    said = f"{what} within a float's range" if past_float_range(cell) else what
    return f"expected {said}, got {cell!r}"


def read_text(path: str | Path) -> str:
    """The file's text, gunzipped when it starts with the gzip magic (whatever its name)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceParseError(f"cannot read: {exc.strerror or exc}", source=str(path)) from exc
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise TraceParseError(f"corrupt gzip data: {exc}", source=str(path)) from exc
    return raw.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- Slurm durations

_DURATION = re.compile(
    r"""^(?:(?P<days>\d+)-)?              # D-
        (?:(?P<a>\d+):)?(?:(?P<b>\d+):)?  # up to two leading fields
        (?P<c>\d+(?:\.\d+)?)$             # last field, may carry fractions
    """,
    re.VERBOSE,
)
_NO_DURATION = {"", "unlimited", "partition_limit", "infinite", "none", "unknown", "invalid"}


def parse_slurm_duration(text: str) -> float:
    """Seconds in a Slurm duration: ``D-HH:MM:SS``, ``D-HH[:MM]``, ``HH:MM:SS``, ``MM:SS[.mmm]``
    or plain minutes (as Slurm reads ``--time=30``). NaN for ``UNLIMITED``/empty.

    Raises ValueError naming the text when it is none of those.
    """
    s = text.strip()
    if s.lower() in _NO_DURATION:
        return math.nan
    m = _DURATION.match(s)
    if m is None:
        raise ValueError(f"not a Slurm duration: {text!r} (expected [D-]HH:MM:SS or MM:SS)")
    days = int(m["days"]) if m["days"] else 0
    parts = [m["a"], m["b"], m["c"]]
    fields = [float(p) for p in parts if p is not None]
    if m["days"] is not None:
        # D-HH, D-HH:MM, D-HH:MM:SS
        hours, minutes, seconds = ([*fields, 0.0, 0.0])[:3]
    elif len(fields) == 3:
        hours, minutes, seconds = fields
    elif len(fields) == 2:
        hours, (minutes, seconds) = 0.0, fields
    else:
        # a bare number is minutes (Slurm's --time convention)
        hours, minutes, seconds = 0.0, fields[0], 0.0
    try:
        total = days * 86400.0 + hours * 3600.0 + minutes * 60.0 + seconds
    except OverflowError:
        total = math.inf
    if not math.isfinite(total):
        raise ValueError(f"a Slurm duration past a float's range: {text!r}")
    return total


def format_slurm_duration(seconds: float) -> str:
    """The inverse of :func:`parse_slurm_duration` for whole seconds: ``[D-]HH:MM:SS``."""
    if not math.isfinite(seconds) or seconds < 0:
        return "UNLIMITED"
    total = round(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    hms = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{hms}" if days else hms


# --------------------------------------------------------------------------- Slurm memory

MemoryScope = Literal["job", "node", "cpu"]
_MEMORY = re.compile(
    r"^(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?P<unit>[KMGTPkmgtp]?)(?P<per>[nc]?)$"
)
_UNIT_MB = {"": 1.0, "K": 1.0 / 1024.0, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}


@dataclass(frozen=True)
class MemoryAmount:
    """A Slurm memory size in MB and what it counts: per node (``n``), per CPU (``c``) or as
    printed without a suffix (``job``: sacct's MaxRSS, or a modern ReqMem per node)."""

    mb: float
    per: MemoryScope = "job"

    def total_mb(self, *, cpus: float = math.nan, nodes: float = math.nan) -> float:
        """MB for the whole job, scaling a per-CPU or per-node request (NaN if unknown)."""
        if self.per == "cpu":
            return self.mb * cpus
        if self.per == "node":
            return self.mb * (nodes if nodes > 0 else 1.0)
        return self.mb


def parse_slurm_memory(text: str, *, default_unit: str = "M") -> MemoryAmount | None:
    """A Slurm memory field: ``4Gn`` (per node), ``3000Mc`` (per CPU), ``123K``, ``0.31M``;
    a bare number is in ``default_unit`` (MB for ReqMem, bytes are never printed). None when
    empty. Raises ValueError naming the text otherwise."""
    s = text.strip()
    if s == "":
        return None
    m = _MEMORY.match(s)
    if m is None:
        raise ValueError(f"not a Slurm memory size: {text!r} (expected e.g. 4Gn, 3000Mc, 123K)")
    unit = (m["unit"] or default_unit).upper()
    per: MemoryScope = {"n": "node", "c": "cpu", "": "job"}[m["per"]]
    mb = float(m["num"]) * _UNIT_MB[unit]
    if not math.isfinite(mb):
        raise ValueError(f"a Slurm memory size past a float's range: {text!r}")
    return MemoryAmount(mb, per)


def format_slurm_memory(amount: MemoryAmount) -> str:
    """The inverse of :func:`parse_slurm_memory`, in whole kilobytes."""
    suffix = {"job": "", "node": "n", "cpu": "c"}[amount.per]
    return f"{round(amount.mb * 1024)}K{suffix}"


def finish_job_frame(
    rows: list[dict[str, Any]],
    columns: list[str],
    text_columns: tuple[str, ...],
    units: dict[str, str],
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Rows of one job each → typed frame (UTC times, submit hour/weekday, text columns),
    and the units of the targets the source really measured (some logs lack a metric)."""
    frame = pd.DataFrame(rows, columns=columns)
    frame["creationdate"] = pd.to_datetime(frame["creationdate"], utc=True)
    frame["finished_at"] = pd.to_datetime(frame["finished_at"], utc=True)
    frame["submit_hour"] = frame["creationdate"].dt.hour.astype(float)
    frame["submit_weekday"] = frame["creationdate"].dt.day_of_week.astype(float)
    for col in text_columns:
        frame[col] = frame[col].astype("string")
    measured = {t: u for t, u in units.items() if frame[f"{t}_value"].notna().any()}
    return frame, measured
