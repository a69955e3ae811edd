"""Throughput of the synthetic PanDA history generator, written to SQLite; prints one JSON line."""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
from pathlib import Path

from record import add_out, emit, reference_loop_s
from scoutless.history.panda_db import make_engine
from scoutless.history.synthetic import generate_history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--chunk-tasks", type=int, default=20_000)
    parser.add_argument(
        "--workers", type=int, default=None, help="builder processes (default: auto)"
    )
    parser.add_argument("--db", type=Path, default=None, help="SQLite file (default: temporary)")
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "history.sqlite"
        engine = make_engine(f"sqlite:///{path}")
        stats = generate_history(
            engine,
            args.tasks,
            seed=args.seed,
            chunk_tasks=args.chunk_tasks,
            progress=False,
            workers=args.workers,
        )
        engine.dispose()
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
        emit(
            {
                "benchmark": "generate",
                "tasks": stats.n_tasks,
                "workers": args.workers if args.workers is not None else "auto",
                "cpus": os.cpu_count(),
                "job_rows": stats.n_jobs,
                "seconds": round(stats.seconds, 2),
                "rows_per_s": round(stats.rows_per_s),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                "builder_peak_rss_mb": round(
                    resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
                ),
                "db_mb": round(size / 2**20, 1),
            },
            args.out,
            loop_before,
        )


if __name__ == "__main__":
    main()
