"""HTCondor job history in its three printed forms, detected from the text:

- ``condor_history -json``: a JSON array of ads (expressions as ``"/Expr(...)/"`` strings);
- the long ClassAd form (``condor_history -l`` and per-job ``history.*`` files): ``Attr =
  value`` lines, ads separated by blank lines; an attribute may repeat and the last wins;
- ``-af:h`` tables: a header of attribute names, then whitespace-separated values.

Attribute names are case-insensitive (as in ClassAds). One job is one task. Targets:
walltime = RemoteWallClockTime (s); cputime = (RemoteUserCpu + RemoteSysCpu) / RequestCpus
(CPU s per core); memory = MemoryUsage (MB) or else ResidentSetSize (kB) or else ImageSize
(kB, virtual), in MB per job. Requests: RequestMemory when numeric (an expression is
unknown), RequestWalltime / MaxWallTimeMins when present. Jobs with no wall time are dropped.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from scoutless.features.spec import FeatureSpec
from scoutless.sources.assemble import TraceJobs, request_col
from scoutless.sources.common import BadLines, TraceParseError, finish_job_frame, read_text

#: Measured after submission: never features (lower-case attribute names).
CONDOR_MEASURED: frozenset[str] = frozenset(
    {"remotewallclocktime", "remoteusercpu", "remotesyscpu", "memoryusage", "residentsetsize",
     "imagesize", "diskusage", "completiondate", "jobstartdate", "jobstatus", "exitcode",
     "lastremotehost", "numjobstarts", "committedtime", "bytessent", "bytesrecvd"}
)  # fmt: skip
CONDOR_FEATURES: tuple[FeatureSpec, ...] = (
    FeatureSpec("owner", "categorical", "condor:Owner"),
    FeatureSpec("acct_group", "categorical", "condor:AcctGroup"),
    FeatureSpec("vo", "categorical", "condor:x509UserProxyVOName"),
    FeatureSpec("executable", "categorical", "condor:Cmd", "file name of Cmd"),
    FeatureSpec("job_universe", "categorical", "condor:JobUniverse"),
    FeatureSpec("request_cpus", "numerical", "condor:RequestCpus"),
    FeatureSpec("request_memory_mb", "numerical", "condor:RequestMemory"),
    FeatureSpec("request_disk_kb", "numerical", "condor:RequestDisk"),
    FeatureSpec("request_walltime_s", "numerical", "condor:RequestWalltime"),
    FeatureSpec("submit_hour", "numerical", "condor:QDate", "UTC"),
    FeatureSpec("submit_weekday", "numerical", "condor:QDate", "0 = Monday"),
)
_LONG_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*=\s*(.*?)\s*$")
_MISSING = {"", "none", "undefined", "error", "null"}


def _classad_value(text: str) -> Any:
    """A ClassAd literal as Python (string, number, bool); expressions stay raw text."""
    s = text.strip()
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1].replace('\\"', '"')
    if s.upper() in ("TRUE", "FALSE"):
        return s.upper() == "TRUE"
    try:
        return float(s) if any(c in s for c in ".eE") else int(s)
    except ValueError:
        return s


def parse_long_form(text: str, *, source: str, bad: BadLines) -> list[dict[str, Any]]:
    ads: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith(("***", "-- ")):
            if current:
                ads.append(current)
                current = {}
            continue
        m = _LONG_LINE.match(line)
        if m is None:
            bad.report(TraceParseError("expected 'Attribute = value'", source=source, line=number))
            continue
        current[m[1].lower()] = _classad_value(m[2])  # the last value of a repeated one wins
    if current:
        ads.append(current)
    return ads


def parse_af_table(text: str, *, source: str, bad: BadLines) -> list[dict[str, Any]]:
    lines = text.splitlines()
    header_at = next(i for i, ln in enumerate(lines) if ln.strip())
    names = [n.lower() for n in lines[header_at].split()]
    ads = []
    for number, line in enumerate(lines[header_at + 1 :], start=header_at + 2):
        if not line.strip():
            continue
        values = line.split()
        if len(values) != len(names):
            bad.report(
                TraceParseError(
                    f"expected {len(names)} values, got {len(values)}", source=source, line=number
                )
            )
            continue
        ads.append({n: _classad_value(v) for n, v in zip(names, values, strict=True)})
    return ads


def parse_json(text: str, *, source: str, bad: BadLines) -> list[dict[str, Any]]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceParseError(f"invalid JSON: {exc.msg}", source=source, line=exc.lineno) from exc
    except (ValueError, RecursionError) as exc:  # over-long integers, absurd nesting
        raise TraceParseError(f"invalid JSON: {exc}", source=source) from exc
    doc = [doc] if isinstance(doc, dict) else doc
    if not isinstance(doc, list):
        raise TraceParseError("expected a JSON array of job ads", source=source, line=1)
    ads = []
    for i, ad in enumerate(doc):
        if not isinstance(ad, dict):
            bad.report(TraceParseError(f"job ad #{i} is not an object", source=source, line=None))
            continue
        ads.append({str(k).lower(): v for k, v in ad.items()})
    return ads


def parse_condor_text(
    text: str, *, source: str = "<text>", skip_bad: bool = False
) -> tuple[list[dict[str, Any]], list[TraceParseError]]:
    """Job ads (lower-case attribute names) from any of the three forms."""
    bad = BadLines(skip=skip_bad)
    stripped = text.lstrip()
    if not stripped:
        raise TraceParseError("empty HTCondor history", source=source)
    if stripped[0] in "[{":
        ads = parse_json(text, source=source, bad=bad)
    elif _LONG_LINE.match(stripped.splitlines()[0]):
        ads = parse_long_form(text, source=source, bad=bad)
    else:
        ads = parse_af_table(text, source=source, bad=bad)
    return ads, bad.errors


def read_condor(
    paths: list[str | Path] | str | Path, *, skip_bad: bool = False
) -> tuple[list[dict[str, Any]], list[TraceParseError]]:
    """Ads of one or more files (per-job ``history.*`` files come one job each)."""
    paths = [paths] if isinstance(paths, str | Path) else list(paths)
    ads, errors = [], []
    for path in paths:
        a, e = parse_condor_text(read_text(path), source=str(path), skip_bad=skip_bad)
        ads += a
        errors += e
    return ads, errors


def _num(ad: dict[str, Any], *names: str) -> float:
    """First attribute that is a finite number (bools and expressions are not)."""
    for name in names:
        v = ad.get(name)
        if isinstance(v, bool) or v is None:
            continue
        if not isinstance(v, str | int | float):
            continue
        try:
            number = float(v)
        except (ValueError, OverflowError):
            continue
        if math.isfinite(number):
            return number
    return math.nan


def _text(ad: dict[str, Any], name: str) -> str | None:
    v = ad.get(name)
    if v is None or (isinstance(v, str) and v.strip().lower() in _MISSING):
        return None
    return str(v)


def _job_id(ad: dict[str, Any], index: int) -> int:
    cluster, proc = _num(ad, "clusterid"), _num(ad, "procid")
    if math.isfinite(cluster) and cluster >= 0:
        return int(cluster) * 100_000 + (int(proc) if math.isfinite(proc) and proc >= 0 else 0)
    return index + 1


def _epoch(seconds: float) -> pd.Timestamp:
    ok = math.isfinite(seconds) and 0 < seconds < 4e9
    return pd.Timestamp(seconds, unit="s", tz="UTC") if ok else pd.NaT


def _memory_mb(ad: dict[str, Any]) -> float:
    usage = _num(ad, "memoryusage")
    if usage > 0:
        return usage
    rss = _num(ad, "residentsetsize", "residentsetsize_raw")
    if rss > 0:
        return rss / 1024.0
    image = _num(ad, "imagesize", "imagesize_raw")
    return image / 1024.0 if image > 0 else math.nan


def _unmeasured_overflows(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Values an absurd ad takes past a float (CPU seconds summed or divided by a
    ``RequestCpus`` near 0, minutes × 60) read as not measured, counted per column: an
    infinity would pass for a measurement and spoil every quantile it enters."""
    counts: dict[str, int] = {}
    for row in rows:
        for name, value in row.items():
            if isinstance(value, float) and math.isinf(value):
                row[name] = math.nan
                counts[name] = counts.get(name, 0) + 1
    return counts


def condor_jobs(
    ads: list[dict[str, Any]], bad_lines: list[TraceParseError] | None = None
) -> TraceJobs:
    """One row per job with a wall time (see the module docstring)."""
    rows = []
    for i, ad in enumerate(ads):
        wall = _num(ad, "remotewallclocktime")
        if not wall > 0:
            continue
        cpus = _num(ad, "requestcpus")
        cpu = sum(v for v in (_num(ad, "remoteusercpu"), _num(ad, "remotesyscpu")) if v == v)
        submit = _epoch(_num(ad, "qdate"))
        completed = _num(ad, "completiondate")
        started = _num(ad, "jobstartdate")
        finished = _epoch(completed if completed > 0 else started + wall)
        request_wall = _num(ad, "requestwalltime")
        if not request_wall > 0:
            request_wall = _num(ad, "maxwalltimemins") * 60.0
        cmd = _text(ad, "cmd")
        rows.append(
            {
                "jeditaskid": _job_id(ad, i),
                "creationdate": submit,
                "finished_at": finished,
                "user": _text(ad, "owner") or _text(ad, "user"),
                "owner": _text(ad, "owner") or _text(ad, "user"),
                "acct_group": _text(ad, "acctgroup"),
                "vo": _text(ad, "x509userproxyvoname"),
                "executable": cmd.rsplit("/", 1)[-1] if cmd else None,
                "job_universe": _text(ad, "jobuniverse"),
                "request_cpus": cpus,
                "request_memory_mb": _num(ad, "requestmemory"),
                "request_disk_kb": _num(ad, "requestdisk"),
                "request_walltime_s": request_wall,
                "walltime_value": wall,
                "cputime_value": cpu / (cpus if cpus > 0 else 1.0),
                "memory_value": _memory_mb(ad),
                request_col("walltime"): request_wall,
                request_col("cputime"): request_wall,
                request_col("memory"): _num(ad, "requestmemory"),
            }
        )
    out_of_range = _unmeasured_overflows(rows)
    frame, units = finish_job_frame(
        rows,
        _COLUMNS,
        ("user", "owner", "acct_group", "vo", "executable", "job_universe"),
        {"memory": "MB/job", "cputime": "CPU s/core", "walltime": "s"},
    )
    info = {"format": "condor", "n_ads": len(ads), "values_out_of_range": out_of_range}
    return TraceJobs(frame, list(CONDOR_FEATURES), units, "condor", info, bad_lines or [])


_COLUMNS = [
    "jeditaskid", "creationdate", "finished_at", "user", "owner", "acct_group", "vo",
    "executable", "job_universe", "request_cpus", "request_memory_mb", "request_disk_kb",
    "request_walltime_s", "walltime_value", "cputime_value", "memory_value",
    request_col("walltime"), request_col("cputime"), request_col("memory"),
]  # fmt: skip
