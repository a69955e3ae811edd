"""Throughput of the target computation (all four targets + scout-only), job rows per second.

Prints one JSON line. Jobs are drawn directly in memory (no database) so the figure is the
estimators' own speed: `python benchmarks/targets.py --jobs 3000000`.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import pandas as pd

from record import add_out, emit, reference_loop_s
from scoutless.config import Settings
from scoutless.targets.estimators import compute_task_targets


def make_jobs(n_jobs: int, jobs_per_task: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n_tasks = max(1, n_jobs // jobs_per_task)
    task = np.sort(rng.integers(1, n_tasks + 1, n_jobs))
    start = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 86400 * 300, n_jobs), "s")
    wall = rng.lognormal(8.5, 0.6, n_jobs)
    cores = rng.choice([1, 8], n_jobs)
    jobs = pd.DataFrame(
        {
            "pandaid": np.arange(n_jobs),
            "jeditaskid": task,
            "jobstatus": np.where(rng.random(n_jobs) < 0.95, "finished", "failed"),
            "specialhandling": np.where(rng.random(n_jobs) < 0.2, "sj", None),
            "corecount": cores,
            "actualcorecount": cores,
            "maxpss": rng.lognormal(14.5, 0.5, n_jobs) * cores,
            "starttime": start,
            "endtime": start + pd.to_timedelta(wall, "s"),
            "nevents": rng.integers(1, 2000, n_jobs),
            "inputfilebytes": rng.lognormal(21, 1, n_jobs),
            "outputfilebytes": rng.lognormal(19, 1, n_jobs),
            "hs06": cores * rng.uniform(8, 15, n_jobs),
        }
    )
    tasks = pd.DataFrame(
        {
            "jeditaskid": np.arange(1, n_tasks + 1),
            "baseramcount": 0,
            "basewalltime": 600,
            "cpuefficiency": 90,
        }
    )
    return jobs, tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=2_000_000)
    parser.add_argument("--jobs-per-task", type=int, default=30)
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    jobs, tasks = make_jobs(args.jobs, args.jobs_per_task)
    settings = Settings()
    compute_task_targets(jobs.head(10_000), tasks, settings=settings)  # warm up
    t0 = time.perf_counter()
    full = compute_task_targets(jobs, tasks, settings=settings)
    t1 = time.perf_counter()
    compute_task_targets(jobs, tasks, settings=settings, scouts_only=True)
    t2 = time.perf_counter()
    emit(
        {
            "benchmark": "targets",
            "job_rows": len(jobs),
            "tasks": len(full),
            "all_jobs_seconds": round(t1 - t0, 3),
            "all_jobs_rows_per_s": round(len(jobs) / (t1 - t0)),
            "scouts_only_seconds": round(t2 - t1, 3),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        },
        args.out,
        loop_before,
    )


if __name__ == "__main__":
    main()
