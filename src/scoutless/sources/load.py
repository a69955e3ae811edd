"""One entry point for every trace format: ``load_trace(format, files) -> TraceJobs``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from scoutless.config import Settings
from scoutless.sources.assemble import TraceJobs
from scoutless.sources.common import TraceParseError
from scoutless.sources.condor import condor_jobs, read_condor
from scoutless.sources.formats import FORMATS
from scoutless.sources.generic import generic_jobs, read_mapping, read_table
from scoutless.sources.panda_jobs import panda_jobs, read_panda_jobs
from scoutless.sources.sacct import read_sacct, sacct_jobs
from scoutless.sources.swf import read_swf, swf_jobs


def load_trace(
    fmt: str,
    files: Sequence[str | Path],
    *,
    settings: Settings,
    skip_bad: bool = False,
    mapping: str | Path | dict[str, Any] | None = None,
) -> TraceJobs:
    """Read ``files`` of format ``fmt`` into normalised jobs (bad lines raise unless skipped);
    ``settings``: PanDA's target definitions (a PanDA job export's values)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown trace format {fmt!r}, expected one of {list(FORMATS)}")
    if not files:
        raise ValueError(f"{fmt}: no input file given")
    if isinstance(mapping, str | Path):
        mapping = read_mapping(mapping)
    mapping = mapping or {}
    paths = [Path(f) for f in files]
    if fmt == "panda-jobs":
        rows, bad = read_panda_jobs(paths, skip_bad=skip_bad)
        return panda_jobs(rows, bad, settings=settings)
    if fmt == "condor":
        ads, bad = read_condor(paths, skip_bad=skip_bad)
        return condor_jobs(ads, bad)
    if len(paths) != 1:
        raise ValueError(f"{fmt}: one file at a time, got {len(paths)}")
    path = paths[0]
    if fmt == "swf":
        return swf_jobs(read_swf(path, skip_bad=skip_bad), name="swf")
    if fmt == "sacct":
        columns = mapping.get("columns")
        if isinstance(columns, str):
            columns = columns.split(",")
        records, bad = read_sacct(path, columns=columns, skip_bad=skip_bad)
        return sacct_jobs(records, bad)
    if not mapping:
        raise TraceParseError("the table format needs a --mapping file", source=str(path))
    frame, lines, bad = read_table(path, skip_bad=skip_bad)
    return generic_jobs(
        pd.DataFrame(frame),
        mapping,
        lines=lines,
        bad_lines=bad,
        source=str(path),
        skip_bad=skip_bad,
    )
