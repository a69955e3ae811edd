"""The raw instance table: one row per attempt of a task instance, what `scoutless import
nextflow` writes and what the sizing protocol reads. Units: bytes and milliseconds
(``submit`` and ``complete``: milliseconds since the epoch; ``time``: the walltime limit)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

#: the instance table's columns, in order (``attempt`` counts from 1)
INSTANCE_COLUMNS: tuple[str, ...] = (
    "workflow", "process", "cpus", "rchar", "rss", "peak_rss", "memory", "time", "realtime",
    "submit", "complete", "status", "exit", "attempt", "censors",
)  # fmt: skip
#: what a failed attempt's ``censors`` column may say ("" for an attempt that completed)
CENSORS: tuple[str, ...] = ("memory", "walltime", "unknown")
#: numeric columns, coerced on reading (a bad value becomes NaN and is dropped where needed)
NUMERIC_COLUMNS: tuple[str, ...] = (
    "cpus", "rchar", "rss", "peak_rss", "memory", "time", "realtime", "submit", "complete",
    "exit", "attempt",
)  # fmt: skip
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


def read_instances(path: str | Path) -> pd.DataFrame:
    """An instance table from Parquet (``.parquet``) or CSV, numeric columns coerced.

    Raises ValueError naming the file when a required column (`process`, `rss`,
    `realtime`) is missing.
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: no such instance table")
    frame = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    missing = [c for c in ("process", "rss", "realtime") if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: instance table lacks column(s) {', '.join(missing)}")
    if "workflow" not in frame.columns:
        frame["workflow"] = path.stem.removeprefix("trace_")
    for col in NUMERIC_COLUMNS:
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce")
    return frame


def workflow_name(path: str | Path) -> str:
    """A workflow's default name: the file's stem without a leading ``trace_``."""
    name = Path(path).name
    for suffix in (".gz", ".parquet", ".csv", ".tsv", ".txt"):
        name = name.removesuffix(suffix)
    return name.removeprefix("trace_")
