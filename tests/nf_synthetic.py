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
