"""The small paths against their numpy definitions, per call, for a served request's sizes.

Each computation with a small path (``scoutless.fast_paths``) is timed twice on the same
input: as it runs (the small path, at or under its threshold) and with the threshold set
below the input's size (the numpy definition). Prints one JSON line: per computation and
row count, microseconds per call of each path (median of repeats) and their ratio; a
small path earns its keep where the ratio is well above 1.
`python benchmarks/fast_paths.py --rows 1 4 16`
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from record import add_out, emit, reference_loop_s
from scoutless.allocation.context import job_context
from scoutless.allocation.values import ndtr
from scoutless.config import PandaDefaults, Settings
from scoutless.fast_paths import FastPaths, using
from scoutless.features.domains import domains, violations
from scoutless.features.history import seconds
from scoutless.models.ordinal_inference import cumulative_link_log_proba
from scoutless.service.decisions import _holding_class
from xgb_inference import per_call_us


def _cases(n: int) -> dict[str, tuple[str, Callable[[], object]]]:
    """Computation -> (the threshold that chooses its path, one call on ``n`` rows)."""
    rng = np.random.default_rng(n)
    numbers = {name: rng.uniform(1, 1000, n) for name in (
        "corecount", "nevents_per_job", "cpuefficiency", "basewalltime", "input_nevents",
        "input_nfiles", "nfiles_per_job")}  # fmt: skip
    defaults = PandaDefaults()
    inner = [1000.0, 2000.0, 4000.0]
    values = rng.uniform(0, 5000, n)
    cuts = np.array([-1.0, 0.0, 1.0], dtype=np.float32)
    location, log_scale = rng.normal(size=(2, n)).astype(np.float32)
    times = [f"2026-01-0{1 + i % 9}T12:00:00" for i in range(n)]
    checked = {"corecount": numbers["corecount"], "nevents_per_job": numbers["nevents_per_job"]}
    table = domains(Settings().replay)
    return {
        "job_context": ("few_tasks", lambda: job_context(numbers, n, defaults)),
        "holding_class": ("few_tasks", lambda: _holding_class(inner, values)),
        "domain_checks": ("few_tasks", lambda: violations(checked, table)),
        "normal_cdf": ("scalar_values", lambda: ndtr(values / 1000.0)),
        "ordinal_head": ("head_rows", lambda: cumulative_link_log_proba(location, log_scale, cuts)),
        "iso_times": ("rows", lambda: seconds(times)),
    }


def measure(rows: list[int], budget_s: float) -> list[dict]:
    out = []
    for n in rows:
        for name, (threshold, call) in _cases(n).items():
            small = per_call_us(call, budget_s)
            with using(replace(FastPaths(), **{threshold: -1})):
                definition = per_call_us(call, budget_s)
            small_path = n <= getattr(FastPaths(), threshold)
            out.append({"computation": name, "rows": n, "threshold": threshold,
                        "small_path": small_path, "small_us": small, "numpy_us": definition,
                        "ratio": round(definition / small, 2)})  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--seconds", type=float, default=0.3, help="timing budget per cell")
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    results = measure(args.rows, args.seconds)
    emit({"benchmark": "fast_paths", "results": results}, args.out, loop_before)


if __name__ == "__main__":
    main()
