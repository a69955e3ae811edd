"""The trace formats ``scoutless import`` reads, by name: a module of its own, without
pandas, so that ``scoutless import --help`` lists them without loading a reader."""

from __future__ import annotations

FORMATS: dict[str, str] = {
    "swf": "Standard Workload Format (Parallel Workloads Archive), gzip or plain",
    "panda-jobs": "PanDA per-job CSV exports, job_records_<jeditaskid>.csv",
    "sacct": "Slurm sacct --parsable2 / --parsable dumps (header line, or columns in --mapping)",
    "condor": "HTCondor history: -json, long ClassAd form (-l, history.*), or -af:h table",
    "table": "any CSV/Parquet job table with a TOML --mapping",
}
