"""Scouts against their whole task: real ATLAS tasks next to a synthetic history; prints JSON.

For each target the ratio scouts' value / whole task's value (P5, median, P95, median
|log ratio|), the within-task spread, mixed core counts and the scouts' class agreement,
on the real per-job exports in ``../shared/data/traces/panda/`` and on ``--tasks``
synthetic tasks (tasks with at least 50 finished jobs on both sides).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from record import add_out, emit, reference_loop_s
from scoutless.config import Settings
from scoutless.history.synthetic import generate_chunk
from scoutless.history.synthetic.realism import TaskJobs, real_task_jobs, realism_report

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "panda"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--real", type=Path, default=DATA, help="folder of job_records_*.csv")
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    paths = sorted(args.real.glob("job_records_*.csv"))
    if not paths:
        raise SystemExit(f"no job_records_*.csv under {args.real}")
    real = realism_report(real_task_jobs(paths), per_task=True, settings=Settings())
    began = time.perf_counter()
    frames = generate_chunk(args.tasks, seed=args.seed)
    synthetic = realism_report(TaskJobs(frames.jobs, frames.tasks), per_task=False, settings=Settings())
    synthetic["generated"] = {
        "tasks": args.tasks,
        "job_rows": len(frames.jobs),
        "seed": args.seed,
        "seconds": round(time.perf_counter() - began, 1),
    }
    emit({"benchmark": "realism", "real": real, "synthetic": synthetic}, args.out, loop_before)


if __name__ == "__main__":
    main()
