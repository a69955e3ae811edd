"""Standard Workload Format logs of the Parallel Workloads Archive.

18 whitespace-separated numeric fields per job, ``-1`` = unknown, ``;`` lines are header
comments (``; Key: value``) kept as metadata. Format:
https://www.cs.huji.ac.il/labs/parallel/workload/swf.html. Cite D. G. Feitelson, D. Tsafrir,
D. Krakov, "Experience with using the Parallel Workloads Archive", JPDC 74(10), 2014, and
the log's donor named in its header (kept in ``info['header']``).

One job is one task (SWF has no grouping). Targets: walltime = run time (s); cputime =
average CPU time per processor (CPU s per core); memory = used memory in MB per core.
SWF's memory fields are KB per processor unless the header says a field's quantity is
``per_job`` (LPC-EGEE: ``mem_used`` and ``mem_req``); both are converted once, here, to
the job table's unit — MB per core of the job's ``cores`` (the requested processors, the
allocated ones where the log has no request) — so that whatever reads the table
(the replay's per-job needs, the online engine, a model's per-core target) multiplies by
the same cores. Zero used memory counts as unknown (several logs write 0 for jobs too
short to be sampled). Only jobs that ran count (run time > 0, status completed or failed;
cancelled-before-start jobs are dropped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoutless.features.spec import FeatureSpec
from scoutless.sources.assemble import TraceJobs, request_col
from scoutless.sources.common import BadLines, TraceParseError, read_text

SWF_FIELDS: tuple[str, ...] = (
    "job_number", "submit_time", "wait_time", "run_time", "allocated_processors",
    "average_cpu_time", "used_memory_kb", "requested_processors", "requested_time",
    "requested_memory_kb", "status", "user_id", "group_id", "executable", "queue",
    "partition", "preceding_job", "think_time",
)  # fmt: skip
#: Measured after the job ran: never features.
SWF_MEASURED: frozenset[str] = frozenset(
    {"wait_time", "run_time", "allocated_processors", "average_cpu_time", "used_memory_kb",
     "status"}
)  # fmt: skip
SWF_FEATURES: tuple[FeatureSpec, ...] = (
    FeatureSpec("user", "categorical", "swf:user_id"),
    FeatureSpec("group", "categorical", "swf:group_id"),
    FeatureSpec("executable", "categorical", "swf:executable"),
    FeatureSpec("queue", "categorical", "swf:queue"),
    FeatureSpec("partition", "categorical", "swf:partition"),
    FeatureSpec("requested_processors", "numerical", "swf:requested_processors"),
    FeatureSpec("requested_time", "numerical", "swf:requested_time", "s"),
    FeatureSpec("requested_memory_mb", "numerical", "swf:requested_memory_kb", "MB/core"),
    FeatureSpec("submit_hour", "numerical", "swf:submit_time", "local hour of day"),
    FeatureSpec("submit_weekday", "numerical", "swf:submit_time", "0 = Monday"),
)
RAN_STATUSES = (0, 1)  # failed, completed (2–4 are checkpoint partials, 5 cancelled)
_HEADER = re.compile(r"^;\s*([A-Za-z][\w ]*?)\s*:\s*(.*)$")


@dataclass
class SwfLog:
    header: dict[str, Any]
    jobs: pd.DataFrame  # SWF_FIELDS as float, -1 kept
    bad_lines: list[TraceParseError] = field(default_factory=list)


def _parse_header(lines: list[str]) -> dict[str, Any]:
    """``; Key: value`` comments; repeated keys (Queue:, Note:) become lists."""
    header: dict[str, Any] = {}
    for line in lines:
        m = _HEADER.match(line)
        if not m:
            continue
        key, value = m[1].strip(), m[2].strip()
        if key in header:
            prev = header[key]
            header[key] = [*prev, value] if isinstance(prev, list) else [prev, value]
        else:
            header[key] = value
    return header


def parse_swf_text(text: str, *, source: str = "<text>", skip_bad: bool = False) -> SwfLog:
    """Parse SWF text; a malformed line raises :class:`TraceParseError` with its line number
    unless ``skip_bad`` (then it is recorded in ``bad_lines``)."""
    bad = BadLines(skip=skip_bad)
    comments: list[str] = []
    rows: list[list[float]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(";"):
            comments.append(stripped)
            continue
        parts = stripped.split()
        if len(parts) != len(SWF_FIELDS):
            bad.report(
                TraceParseError(
                    f"expected {len(SWF_FIELDS)} fields, got {len(parts)}",
                    source=source,
                    line=number,
                )
            )
            continue
        try:
            values = [float(p) for p in parts]
        except ValueError:
            bad.report(
                TraceParseError(
                    f"non-numeric field in {stripped[:60]!r}", source=source, line=number
                )
            )
            continue
        if not all(np.isfinite(values)):
            bad.report(TraceParseError("non-finite field", source=source, line=number))
            continue
        rows.append(values)
    jobs = pd.DataFrame(
        np.array(rows, dtype=float).reshape(-1, len(SWF_FIELDS)), columns=SWF_FIELDS
    )
    return SwfLog(header=_parse_header(comments), jobs=jobs, bad_lines=bad.errors)


def read_swf(path: str | Path, *, skip_bad: bool = False) -> SwfLog:
    """Read an SWF file (gzip or plain)."""
    return parse_swf_text(read_text(path), source=str(path), skip_bad=skip_bad)


def _unknown(x: pd.Series) -> pd.Series:
    return x.where(x >= 0)


def _category(x: pd.Series) -> pd.Series:
    """SWF ids as strings; -1 (unknown) becomes missing."""
    out = x.where(x >= 0).astype("Int64").astype("string")
    return out


def _memory_per_job(header: dict[str, Any], field: str = "mem_used") -> bool:
    """Whether the header says the memory ``field`` (``mem_used``, ``mem_req``) is per job
    (``Note: The 'mem_used' column relates to: quantity=per_job``), not per processor."""
    notes = header.get("Note", [])
    notes = notes if isinstance(notes, list) else [notes]
    return any(field in n and "per_job" in n for n in notes)


def _cores(j: pd.DataFrame) -> pd.Series:
    """The processors a job runs on: those it requested, those it was given where the log
    has no request (1 where it has neither)."""
    requested = j["requested_processors"].where(j["requested_processors"] >= 1)
    allocated = j["allocated_processors"].where(j["allocated_processors"] >= 1)
    return requested.fillna(allocated).fillna(1.0)


def memory_mb_per_core(kb: pd.Series, cores: pd.Series, per_job: bool) -> pd.Series:
    """An SWF memory field (KB per processor, or per job where the header says so; NaN
    unknown) in the job table's unit, MB per core: the one place SWF's memory is converted."""
    mb = kb / 1024.0
    return mb / cores if per_job else mb


def _timezone(header: dict[str, Any]) -> str:
    tz = (
        str(header.get("TimeZoneString", "UTC")).split()[0]
        if header.get("TimeZoneString")
        else "UTC"
    )
    try:
        pd.Timestamp(0, tz=tz)
    except Exception:  # an unknown zone name in a header must not stop the import
        return "UTC"
    return tz


def swf_jobs(log: SwfLog, *, name: str = "swf") -> TraceJobs:
    """Normalise a parsed log into :class:`TraceJobs` (see the module docstring)."""
    j = log.jobs
    ran = (j["run_time"] > 0) & j["status"].isin(RAN_STATUSES)
    j = j[ran]
    start = float(str(log.header.get("UnixStartTime", "0")).split()[0] or 0)
    submit = pd.to_datetime(start + j["submit_time"], unit="s", utc=True)
    local = submit.dt.tz_convert(_timezone(log.header))
    wait = j["wait_time"].where(j["wait_time"] >= 0, 0.0)
    finished = pd.to_datetime(start + j["submit_time"] + wait + j["run_time"], unit="s", utc=True)
    cores = _cores(j)
    used_kb = j["used_memory_kb"].where(j["used_memory_kb"] > 0)
    used_mem = memory_mb_per_core(used_kb, cores, _memory_per_job(log.header))
    requested_mem = memory_mb_per_core(
        _unknown(j["requested_memory_kb"]), cores, _memory_per_job(log.header, "mem_req")
    )
    frame = pd.DataFrame(
        {
            "jeditaskid": j["job_number"].astype(np.int64),
            "creationdate": submit,
            "finished_at": finished,
            "user": _category(j["user_id"]),
            "group": _category(j["group_id"]),
            "executable": _category(j["executable"]),
            "queue": _category(j["queue"]),
            "partition": _category(j["partition"]),
            "requested_processors": _unknown(j["requested_processors"]),
            "requested_time": _unknown(j["requested_time"]),
            "requested_memory_mb": requested_mem,
            "cores": cores,
            "submit_hour": local.dt.hour.astype(float),
            "submit_weekday": local.dt.day_of_week.astype(float),
            "walltime_value": j["run_time"],
            "cputime_value": _unknown(j["average_cpu_time"]),
            "memory_value": used_mem,
            request_col("walltime"): _unknown(j["requested_time"]),
            # the wall limit is also the CPU limit of a core: the only CPU "request" SWF has
            request_col("cputime"): _unknown(j["requested_time"]),
            request_col("memory"): requested_mem,
        }
    )
    units = {
        "memory": "MB/core",
        "cputime": "CPU s/core",
        "walltime": "s",
    }
    # keep a target only when the log measures it for a useful share of the jobs
    units = {t: u for t, u in units.items() if frame[f"{t}_value"].notna().mean() >= 0.05}
    info = {
        "format": "swf",
        "header": {k: log.header[k] for k in list(log.header)[:60]},
        "n_jobs_in_log": len(log.jobs),
        "n_jobs_not_run": int((~ran).sum()),
        "citation": "D. G. Feitelson, D. Tsafrir, D. Krakov, 'Experience with using the "
        "Parallel Workloads Archive', JPDC 74(10), 2014; log donor: "
        f"{log.header.get('Acknowledge', 'see header')}",
    }
    return TraceJobs(frame, list(SWF_FEATURES), units, name, info, log.bad_lines)
