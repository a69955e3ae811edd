"""Small synthetic workflows in the layout of Sizey's nf-core traces (Nextflow columns,
raw bytes and milliseconds): what the sizing tests run on instead of the real traces."""

from __future__ import annotations

import numpy as np
import pandas as pd

GB = 1e9


def synthetic_workflow(seed: int = 0, rows: int = 60, name: str = "demo") -> pd.DataFrame:
    """Three processes: memory growing with input size, a constant need with noise, and
    a need on a plateau (a tool's buffer); requests generous, as users set them."""
    rng = np.random.default_rng(seed)
    parts = []
    for process, need in (
        ("NF:ALIGN", lambda x: 0.5 * GB + 2.0 * x * rng.lognormal(0, 0.1, len(x))),
        ("NF:FASTQC", lambda x: 0.3 * GB * rng.lognormal(0, 0.05, len(x))),
        ("NF:SORT", lambda x: np.minimum(0.2 * GB + 1.5 * x, 4 * GB) * rng.lognormal(0, 0.02, len(x))),
    ):  # fmt: skip
        rchar = rng.uniform(0.2, 3.0, rows) * GB
        rss = need(rchar)
        parts.append(pd.DataFrame({
            "process": process, "cpus": 2, "rchar": rchar.round(), "rss": rss.round(),
            "peak_rss": (rss * 1.05).round(), "memory": 16 * 2**30,
            "realtime": rng.uniform(0.2, 2.0, rows) * 3.6e6, "status": "COMPLETED", "exit": 0,
            "attempt": 1, "workflow": name,
        }))  # fmt: skip
    return pd.concat(parts, ignore_index=True)


#: Nextflow's trace columns, in the order Nextflow writes them with ``trace.raw = true``
TRACE_COLUMNS = ("task_id", "hash", "native_id", "name", "process", "status", "exit", "cpus",
                 "memory", "realtime", "%cpu", "rss", "peak_rss", "rchar", "wchar")  # fmt: skip


def nextflow_trace(frame: pd.DataFrame, seed: int = 0) -> str:
    """``frame`` as Nextflow writes its trace file: tab-separated, raw bytes and ms, a task
    id, a work-folder hash and a job name per row."""
    rng = np.random.default_rng(seed)
    rows = frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # run order
    out = pd.DataFrame({
        "task_id": np.arange(1, len(rows) + 1),
        "hash": [f"{rng.integers(0, 256):02x}/{rng.integers(0, 16**6):06x}" for _ in rows.index],
        "native_id": 4_100_000 + np.arange(len(rows)),
        "name": [f"{p} ({i + 1})" for i, p in enumerate(rows["process"])],
        "process": rows["process"], "status": rows["status"], "exit": rows["exit"],
        "cpus": rows["cpus"], "memory": rows["memory"].astype("int64"),
        "realtime": rows["realtime"].round().astype("int64"),
        "%cpu": rng.uniform(80, 195, len(rows)).round(1),
        "rss": rows["rss"].astype("int64"), "peak_rss": rows["peak_rss"].astype("int64"),
        "rchar": rows["rchar"].astype("int64"),
        "wchar": (rows["rchar"] * rng.uniform(0.1, 0.6, len(rows))).round().astype("int64"),
    })  # fmt: skip
    return out[list(TRACE_COLUMNS)].to_csv(sep="\t", index=False)


#: the example trace shipped for `scoutless size` (docs/how-to/sizing.md), made by this module
EXAMPLE_TRACE = "docs/examples/trace_demo.txt"


def example_trace() -> str:
    """The shipped example's text: three task types, 80 instances each."""
    return nextflow_trace(synthetic_workflow(seed=7, rows=80, name="demo"), seed=7)


if __name__ == "__main__":  # python tests/nf_synthetic.py: (re)write the shipped example
    from pathlib import Path

    Path(EXAMPLE_TRACE).write_text(example_trace())
