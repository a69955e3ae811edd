"""Slurm accounting dumps: ``sacct --parsable2`` (``|``, header line) and ``--parsable``
(trailing delimiter) with any delimiter (``--delimiter=☃``); without a header line the
column list must be given (``columns=`` / a mapping file's ``columns``).

One job (an array element counts as a job) is one task. Step lines (``123.batch``,
``123.0``, ``123.extern``) only contribute measurements to their job. Targets: walltime =
Elapsed (s); cputime = TotalCPU / allocated CPUs (CPU s per core); memory = the largest
MaxRSS over the job's steps, in MB *per task as Slurm reports it* (not per core: a task may
use several CPUs). Requests: Timelimit (for walltime and, as the per-core CPU bound,
cputime) and ReqMem (``c`` per CPU × ReqCPUS, ``n`` / no suffix per node × nodes). Jobs that
never ran (Elapsed 0, no end) are dropped.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoutless.features.spec import FeatureSpec
from scoutless.sources.assemble import TraceJobs, request_col
from scoutless.sources.common import (
    BadLines,
    TraceParseError,
    finish_job_frame,
    parse_slurm_duration,
    parse_slurm_memory,
    read_text,
)

DELIMITERS = ("|", "☃", ";", "\t")
#: Measured after submission: never features (lower-case sacct names).
SACCT_MEASURED: frozenset[str] = frozenset(
    {"elapsed", "totalcpu", "cputime", "usercpu", "systemcpu", "maxrss", "averss", "maxvmsize",
     "state", "exitcode", "start", "end", "nodelist", "ncpus", "alloccpus", "nnodes",
     "allocnodes", "alloctres", "tresusageinmax", "tresusageintot", "maxdiskread",
     "maxdiskwrite", "consumedenergyraw", "mincpu"}
)  # fmt: skip
SACCT_FEATURES: tuple[FeatureSpec, ...] = (
    FeatureSpec("user", "categorical", "sacct:User"),
    FeatureSpec("account", "categorical", "sacct:Account"),
    FeatureSpec("partition", "categorical", "sacct:Partition"),
    FeatureSpec("qos", "categorical", "sacct:QOS"),
    FeatureSpec("group", "categorical", "sacct:Group"),
    FeatureSpec("jobname", "categorical", "sacct:JobName"),
    FeatureSpec("req_cpus", "numerical", "sacct:ReqCPUS"),
    FeatureSpec("req_nodes", "numerical", "sacct:ReqNodes / ReqTRES node="),
    FeatureSpec("req_gpus", "numerical", "sacct:ReqTRES gres/gpu="),
    FeatureSpec("req_mem_mb", "numerical", "sacct:ReqMem", "MB for the whole job"),
    FeatureSpec("timelimit_s", "numerical", "sacct:Timelimit"),
    FeatureSpec("submit_hour", "numerical", "sacct:Submit"),
    FeatureSpec("submit_weekday", "numerical", "sacct:Submit", "0 = Monday"),
)
NOT_RUN_STATES = ("PENDING", "RUNNING", "REQUEUED", "RESIZING", "SUSPENDED")


@dataclass
class SacctRecord:
    """The fields scoutless uses from one sacct line, already converted."""

    line: int
    job: str  # the job id (array element included), without the step suffix
    is_step: bool
    fields: dict[str, str]
    elapsed_s: float
    totalcpu_s: float
    timelimit_s: float
    maxrss_mb: float
    req_mem_mb: float


def _detect_delimiter(first: str) -> str:
    counts = {d: first.count(d) for d in DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    if counts[best] == 0:
        raise TraceParseError("no field delimiter (| or ☃) in the first line", line=1)
    return best


def _tres_value(tres: str, key: str) -> float:
    for item in tres.split(","):
        name, _, value = item.partition("=")
        if name.strip() == key:
            try:
                return float(value)
            except ValueError:
                return math.nan
    return math.nan


def _number(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        return math.nan
    return v if math.isfinite(v) else math.nan


def _first_positive(*values: float) -> float:
    """The first value that is a positive number (sacct writes 0 or nothing when unknown)."""
    return next((v for v in values if v > 0), math.nan)


def _record(fields: dict[str, str], line: int) -> SacctRecord:
    """Convert one line's fields; ValueError names the field on bad units."""
    job_id = fields.get("jobid", "") or fields.get("jobidraw", "")
    if not job_id:
        raise ValueError("empty JobID")
    job, _, step = job_id.partition(".")

    def duration(name: str) -> float:
        try:
            return parse_slurm_duration(fields.get(name, ""))
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None

    def memory_mb(name: str, default_unit: str) -> float:
        try:
            amount = parse_slurm_memory(fields.get(name, ""), default_unit=default_unit)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        if amount is None:
            return math.nan
        tres = fields.get("reqtres", "")
        cpus = _first_positive(_number(fields.get("reqcpus", "")), _tres_value(tres, "cpu"))
        nodes = _first_positive(_number(fields.get("reqnodes", "")), _tres_value(tres, "node"))
        return amount.total_mb(cpus=cpus, nodes=nodes)

    return SacctRecord(
        line=line,
        job=job,
        is_step=bool(step),
        fields=fields,
        elapsed_s=duration("elapsed"),
        totalcpu_s=duration("totalcpu"),
        timelimit_s=duration("timelimit"),
        maxrss_mb=memory_mb("maxrss", "K"),
        req_mem_mb=memory_mb("reqmem", "M"),
    )


def parse_sacct_text(
    text: str,
    *,
    source: str = "<text>",
    columns: list[str] | None = None,
    skip_bad: bool = False,
) -> tuple[list[SacctRecord], list[TraceParseError]]:
    """The lines of an sacct dump as records, with bad lines reported at their number."""
    bad = BadLines(skip=skip_bad)
    lines = text.splitlines()
    first_index = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first_index is None:
        raise TraceParseError("empty sacct dump", source=source)
    try:
        delimiter = _detect_delimiter(lines[first_index])
    except TraceParseError as exc:
        raise TraceParseError(exc.message, source=source, line=first_index + 1) from None
    head = [c.strip().lower() for c in lines[first_index].split(delimiter)]
    if head and head[0] in ("jobid", "jobidraw"):
        names, start = head, first_index + 1
    elif columns:
        names, start = [c.strip().lower() for c in columns], first_index
    else:
        raise TraceParseError(
            "no header line (first field is not JobID); give the column list "
            "(a mapping file with columns = [...])",
            source=source,
            line=first_index + 1,
        )
    while names and names[-1] == "":  # --parsable header ends with the delimiter
        names.pop()
    if "jobid" not in names and "jobidraw" not in names:
        raise TraceParseError(f"no JobID column in {names[:8]}", source=source, line=1)
    records = []
    for number, raw in enumerate(lines[start:], start=start + 1):
        if not raw.strip():
            continue
        values = raw.split(delimiter)
        if len(values) == len(names) + 1 and values[-1] == "":
            values.pop()
        if len(values) != len(names):
            bad.report(
                TraceParseError(
                    f"expected {len(names)} fields, got {len(values)}", source=source, line=number
                )
            )
            continue
        try:
            records.append(
                _record(dict(zip(names, (v.strip() for v in values), strict=True)), number)
            )
        except ValueError as exc:
            bad.report(TraceParseError(str(exc), source=source, line=number))
    return records, bad.errors


def read_sacct(
    path: str | Path, *, columns: list[str] | None = None, skip_bad: bool = False
) -> tuple[list[SacctRecord], list[TraceParseError]]:
    return parse_sacct_text(read_text(path), source=str(path), columns=columns, skip_bad=skip_bad)


def _job_id(job: str) -> int:
    """A stable integer id: the job number, or (array elements ``123_4``) a CRC above 2^40."""
    if job.isdigit() and len(job) < 18:
        return int(job)
    return (1 << 40) + zlib.crc32(job.encode())


def _time(text: str) -> pd.Timestamp:
    t = pd.to_datetime(text, errors="coerce", utc=True, format="ISO8601") if text else pd.NaT
    return t if isinstance(t, pd.Timestamp) else pd.NaT


def _state(fields: dict[str, str]) -> str:
    return fields.get("state", "").split(" ")[0].upper()


def _job_row(job: str, recs: list[SacctRecord]) -> dict[str, Any] | None:
    """The job's row from its job line and steps; None when it never ran."""
    head = next((r for r in recs if not r.is_step), None)
    if head is None:  # steps without their job line: no request to learn from
        return None
    f = head.fields
    if _state(f) in NOT_RUN_STATES or not head.elapsed_s > 0:
        return None
    cpus = _first_positive(
        _number(f.get("alloccpus", "")),
        _number(f.get("ncpus", "")),
        _number(f.get("reqcpus", "")),
    )
    total_cpu = head.totalcpu_s
    if not total_cpu > 0:
        total_cpu = float(np.nansum([r.totalcpu_s for r in recs if r.is_step])) or math.nan
    rss = [r.maxrss_mb for r in recs if np.isfinite(r.maxrss_mb) and r.maxrss_mb > 0]
    submit = _time(f.get("submit", ""))
    end = _time(f.get("end", ""))
    if pd.isna(end) and not pd.isna(_time(f.get("start", ""))):
        end = _time(f.get("start", "")) + pd.Timedelta(seconds=head.elapsed_s)
    req_tres = f.get("reqtres", "")
    return {
        "jeditaskid": _job_id(job),
        "creationdate": submit,
        "finished_at": end,
        "user": f.get("user") or None,
        "account": f.get("account") or None,
        "partition": f.get("partition") or None,
        "qos": f.get("qos") or None,
        "group": f.get("group") or None,
        "jobname": f.get("jobname") or None,
        "req_cpus": _first_positive(_number(f.get("reqcpus", "")), _tres_value(req_tres, "cpu")),
        "req_nodes": _first_positive(_number(f.get("reqnodes", "")), _tres_value(req_tres, "node")),
        "req_gpus": _tres_value(req_tres, "gres/gpu"),
        "req_mem_mb": head.req_mem_mb,
        "timelimit_s": head.timelimit_s,
        "walltime_value": head.elapsed_s,
        "cputime_value": total_cpu / cpus if cpus > 0 else math.nan,
        "memory_value": max(rss) if rss else math.nan,
        request_col("walltime"): head.timelimit_s,
        request_col("cputime"): head.timelimit_s,
        request_col("memory"): head.req_mem_mb,
    }


def sacct_jobs(
    records: list[SacctRecord], bad_lines: list[TraceParseError] | None = None
) -> TraceJobs:
    """One row per job that ran (see the module docstring)."""
    by_job: dict[str, list[SacctRecord]] = {}
    for r in records:
        by_job.setdefault(r.job, []).append(r)
    rows = [row for job, recs in by_job.items() if (row := _job_row(job, recs)) is not None]
    frame, units = finish_job_frame(
        rows,
        _COLUMNS,
        ("user", "account", "partition", "qos", "group", "jobname"),
        {"memory": "MB/task (MaxRSS)", "cputime": "CPU s/core", "walltime": "s"},
    )
    info = {"format": "sacct", "n_lines": len(records), "n_jobs": len(by_job)}
    return TraceJobs(frame, list(SACCT_FEATURES), units, "sacct", info, bad_lines or [])


_COLUMNS = [
    "jeditaskid", "creationdate", "finished_at", "user", "account", "partition", "qos",
    "group", "jobname", "req_cpus", "req_nodes", "req_gpus", "req_mem_mb", "timelimit_s",
    "walltime_value", "cputime_value", "memory_value", request_col("walltime"),
    request_col("cputime"), request_col("memory"),
]  # fmt: skip
