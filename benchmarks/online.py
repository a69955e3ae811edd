"""The online sizer's cost at scale: time per job, resident memory and the state each
task type holds, as outcomes accumulate.

A synthetic stream of jobs over tasks and task types (each task of one type; a type's need
a line in its input size plus noise, log scale; a few tasks' inputs larger than their
type's) is sized by `scoutless.sizing.online.OnlineSizer` through its protocol, as a
caller does it: ``first``, then ``learn`` of a censored `Outcome` and ``retry`` while the
allocation is below the need, then ``learn`` of the need. One core, one process. At each
checkpoint (a share of the stream) the JSON records the seconds per job and per outcome
over the segment since the last one (decision + update, amortised), the process's
resident memory, and the bytes the sizer's per-type state holds (a deep size of its
containers) against the outcomes the types hold — flat once a type reaches the cap
(``--max-outcomes``, default `SizingSettings.max_outcomes_per_type`).

    nice python benchmarks/online.py --jobs 1000000 --tasks 10000 --types 100 \\
        --out results/online.json
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from record import add_out, emit, reference_loop_s
from scoutless.config import SizingSettings
from scoutless.sizing.features import Release
from scoutless.sizing.online import OnlineSizer
from scoutless.sizing.protocol import Outcome

#: checkpoints: the shares of the stream at which cost and state are recorded
CHECKPOINTS: tuple[float, ...] = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0)
#: the shortest attempt a kill's runtime is drawn down to (a share of the job's runtime)
KILL_RUNTIME_SHARE = 0.5
#: retries a job may take before the benchmark gives it its need (none expected)
MAX_ATTEMPTS = 32


@dataclass(frozen=True)
class Stream:
    """The synthetic jobs, in submission order: type key, features, need, runtime."""

    types: np.ndarray
    input_size: np.ndarray
    cpus: np.ndarray
    request: np.ndarray
    need: np.ndarray
    runtime: np.ndarray


def make_stream(jobs: int, tasks: int, types: int, seed: int) -> Stream:
    """``jobs`` jobs over ``tasks`` tasks (each of one of ``types`` types), tasks
    submitted one after another and their jobs interleaved within blocks of tasks."""
    rng = np.random.default_rng(seed)
    task_type = rng.integers(0, types, tasks)
    task_input = rng.lognormal(np.log(2e9), 1.0, tasks)  # bytes, a task's typical input
    task_of_job = np.sort(rng.integers(0, tasks, jobs))
    block = max(1, jobs // max(1, tasks) * 8)
    for start in range(0, jobs, block):  # a few tasks run at once
        rng.shuffle(task_of_job[start : start + block])
    type_base = rng.uniform(np.log(5e8), np.log(8e9), types)  # bytes at 1 GB input
    type_slope = rng.uniform(0.0, 0.8, types)
    type_noise = rng.uniform(0.05, 0.5, types)
    kind = task_type[task_of_job]
    input_size = task_input[task_of_job] * rng.lognormal(0.0, 0.3, jobs)
    log_need = (
        type_base[kind]
        + type_slope[kind] * np.log(input_size / 1e9)
        + rng.normal(0.0, 1.0, jobs) * type_noise[kind]
    )
    need = np.exp(log_need)
    cpus = np.where(rng.random(types) < 0.3, 8.0, 1.0)[kind]
    request = np.exp(type_base[kind] + 1.0)  # the user's request: generous, per type
    runtime = rng.lognormal(np.log(3600.0), 0.8, jobs)  # seconds
    return Stream(kind, input_size, cpus, request, need, runtime)


def size_job(sizer: OnlineSizer, stream: Stream, j: int) -> int:
    """One job through the sizer as a caller drives it; the outcomes it produced."""
    key = int(stream.types[j])
    f = Release(input_size=float(stream.input_size[j]), cores=float(stream.cpus[j]),
                request=float(stream.request[j]))
    need, runtime = float(stream.need[j]), float(stream.runtime[j])
    alloc = sizer.first(key, f)
    if not np.isfinite(alloc):
        alloc = f.request
    outcomes = 1
    while alloc < need and outcomes < MAX_ATTEMPTS:
        sizer.learn(key, f, Outcome(alloc, runtime * KILL_RUNTIME_SHARE, censored=True))
        alloc = sizer.retry(key, f, alloc)
        outcomes += 1
    sizer.learn(key, f, Outcome(need, runtime))
    return outcomes


def deep_bytes(obj: Any, seen: set[int] | None = None) -> int:
    """The bytes an object holds with everything it refers to (containers, arrays,
    dataclasses), each object counted once."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        base = obj.base if obj.base is not None else None
        return sys.getsizeof(obj) + (deep_bytes(base, seen) if base is not None else 0)
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(deep_bytes(k, seen) + deep_bytes(v, seen) for k, v in obj.items())
    elif isinstance(obj, list | tuple | set):
        size += sum(deep_bytes(v, seen) for v in obj)
    elif is_dataclass(obj) and not isinstance(obj, type):
        size += sum(deep_bytes(getattr(obj, f.name), seen) for f in fields(obj))
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        size += deep_bytes(vars(obj), seen)
    return size


def state_record(sizer: OnlineSizer) -> dict[str, Any]:
    """Bytes of per-type state (all types, per type: median and largest) against the
    outcomes each type holds."""
    per_type = {k: deep_bytes(s) for k, s in sizer.types.items()}
    outcomes = {k: len(s.rows) for k, s in sizer.types.items()}
    total = sum(per_type.values())
    held = sum(outcomes.values())
    largest = max(per_type, key=per_type.get)
    return {
        "types": len(per_type),
        "state_bytes": total,
        "state_bytes_per_type_median": float(np.median(list(per_type.values()))),
        "state_bytes_largest_type": per_type[largest],
        "outcomes_largest_type": outcomes[largest],
        "outcomes_held": held,
        "state_bytes_per_outcome": total / held if held else None,
    }


def run(
    stream: Stream, checkpoints: tuple[float, ...], settings: SizingSettings
) -> list[dict[str, Any]]:
    """The stream through one sizer; a record per checkpoint."""
    sizer, proc = OnlineSizer(settings), psutil.Process()
    n = len(stream.need)
    marks = sorted({max(1, round(share * n)) for share in checkpoints})
    records, done, outcomes, cpu_total = [], 0, 0, 0.0
    for mark in marks:
        seg_outcomes, start = 0, time.process_time()
        for j in range(done, mark):
            seg_outcomes += size_job(sizer, stream, j)
        seconds = time.process_time() - start
        cpu_total += seconds
        jobs, done, outcomes = mark - done, mark, outcomes + seg_outcomes
        records.append({
            "jobs": done, "outcomes": outcomes,
            "segment_ms_per_job": 1e3 * seconds / jobs,
            "segment_ms_per_outcome": 1e3 * seconds / seg_outcomes,
            "cumulative_ms_per_job": 1e3 * cpu_total / done,
            "rss_mb": proc.memory_info().rss / 2**20,
            **state_record(sizer),
        })  # fmt: skip
        print(f"{done} jobs: {records[-1]['segment_ms_per_job']:.2f} ms/job", file=sys.stderr)
    return records


def growth(records: list[dict[str, Any]]) -> dict[str, Any]:
    """State and resident memory added per outcome learnt between the first and last
    checkpoints, overall and per type."""
    first, last = records[0], records[-1]
    added = last["outcomes_held"] - first["outcomes_held"]
    if added <= 0:
        return {}
    return {
        "state_bytes_per_added_outcome": (last["state_bytes"] - first["state_bytes"]) / added,
        "rss_bytes_per_added_outcome": (last["rss_mb"] - first["rss_mb"]) * 2**20 / added,
        "state_bytes_per_type_first": first["state_bytes"] / first["types"],
        "state_bytes_per_type_last": last["state_bytes"] / last["types"],
        "outcomes_per_type_first": first["outcomes_held"] / first["types"],
        "outcomes_per_type_last": last["outcomes_held"] / last["types"],
    }


def commit() -> str:
    """The commit measured (with ``+dirty`` when the work tree differs from it)."""
    root = Path(__file__).resolve().parent.parent
    git = ["git", "-C", str(root)]
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain", "src"], capture_output=True, text=True)
    return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000, help="jobs in the stream")
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--types", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    default_cap = SizingSettings().max_outcomes_per_type
    parser.add_argument("--max-outcomes", type=int, default=default_cap,
                        help="outcomes a type holds at most (0: every outcome)")  # fmt: skip
    parser.add_argument("--neighbourhood-share", type=float,
                        default=SizingSettings().neighbourhood_share,
                        help="sizing.neighbourhood_share (0: every row alike, one sample a type)")  # fmt: skip
    add_out(parser)
    args = parser.parse_args(argv)
    loop_before = reference_loop_s()
    measured = commit()  # before the run: what was imported, not what changed since
    stream = make_stream(args.jobs, args.tasks, args.types, args.seed)
    rss_before = psutil.Process().memory_info().rss / 2**20
    settings = SizingSettings(max_outcomes_per_type=args.max_outcomes or None,
                              neighbourhood_share=args.neighbourhood_share)  # fmt: skip
    records = run(stream, CHECKPOINTS, settings)
    last = records[-1]
    result = {
        "commit": measured,
        "sizer": "scoutless.sizing.online.OnlineSizer (memory only)",
        "max_outcomes_per_type": settings.max_outcomes_per_type,
        "neighbourhood_share": settings.neighbourhood_share,
        "jobs": args.jobs, "tasks": args.tasks, "types": args.types, "seed": args.seed,
        "outcomes": last["outcomes"],
        "ms_per_job": last["cumulative_ms_per_job"],
        "ms_per_job_last_segment": last["segment_ms_per_job"],
        "rss_mb_before": rss_before, "rss_mb": last["rss_mb"],
        "growth": growth(records),
        "checkpoints": records,
    }  # fmt: skip
    emit(result, args.out, loop_before)


if __name__ == "__main__":
    main()
