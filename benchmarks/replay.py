"""Replay speed: all three strategies over a synthetic history; prints JSON.

Goal (issue 10): 100k tasks (~2.6M jobs) replayed for scouts, predicted and hybrid in
≤ 5 min and ≤ 4 GB on 2 cores. Reports tasks/s, events/s, jobs/s and peak RSS per phase.

    python benchmarks/replay.py --tasks 100000            # generates the history (cached)
    python benchmarks/replay.py --db sqlite:///history.sqlite --bundle bundle/

Without ``--bundle`` the predicted/hybrid strategies get *oracle* predictions (each task's
true class's recommended value under the default bins): the speed is what is measured
here, the quality figures come from ``scoutless demo`` / ``scoutless replay``.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import numpy as np

from record import add_out, emit, reference_loop_s
from scoutless.config import Settings, get_settings
from scoutless.replay.history import workload_from_db
from scoutless.replay.runner import replay_document, run_strategies, true_classes
from scoutless.replay.strategies import ALLOCATED_TARGETS, predicted_values
from scoutless.replay.workload import TaskEstimator, Workload
from scoutless.targets.bins import load_bins


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_seconds() -> float:
    """CPU time of this process: on a shared machine, wall time also counts others' work."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cached_history(n_tasks: int, workdir: Path, seed: int) -> str:
    path = workdir / f"replay_history_{n_tasks}_{seed}.sqlite"
    if not path.exists():
        from scoutless.history.panda_db import make_engine
        from scoutless.history.synthetic import generate_history

        tmp = path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        engine = make_engine(f"sqlite:///{tmp}")
        generate_history(engine, n_tasks, seed=seed, progress=False)
        engine.dispose()
        tmp.rename(path)
    return f"sqlite:///{path}"


def oracle_values(work: Workload, settings: Settings) -> dict[str, np.ndarray]:
    """Recommended value of each task's true class (default bins): a stand-in predictor."""
    bins = load_bins(targets=list(ALLOCATED_TARGETS))
    ram, cpu = TaskEstimator(work, settings)(np.arange(work.n_jobs))
    out = {}
    for target, values in (("memory", ram), ("cputime", cpu)):
        v = np.array([values.get(t, np.nan) for t in range(work.n_tasks)])
        cls = np.maximum(bins[target].classify(v), 0)
        out[target] = np.asarray(bins[target].recommended)[cls]
    return out


def report(
    work: Workload,
    results: dict,
    document: dict,
    phases: dict[str, float],
    per_strategy: dict[str, float],
    measured: dict[str, float],
    predictions: str,
) -> dict:
    """The benchmark's JSON."""
    events = sum(r.n_events for r in results.values())
    total = phases["load_s"] + phases["predict_s"] + phases["replay_s"] + phases["metrics_s"]
    return {
        "tasks": work.n_tasks,
        "jobs": work.n_jobs,
        "strategies": list(results),
        "predictions": predictions,
        "seconds": {**{k: round(v, 1) for k, v in phases.items()}, "total": round(total, 1)},
        "cpu_seconds_after_history": round(measured["cpu_s"], 1),
        "workers": measured["workers"],
        "replay_children_cpu_seconds": measured["children_cpu_s"],
        "replay_seconds_per_strategy": {k: round(v, 1) for k, v in per_strategy.items()},
        "tasks_per_s": round(work.n_tasks * len(results) / phases["replay_s"], 1),
        "jobs_per_s": round(work.n_jobs * len(results) / phases["replay_s"], 1),
        "events_per_s": round(events / phases["replay_s"], 1),
        "events": events,
        "peak_rss_mb": {
            "after_load": round(measured["rss_load"]),
            "end": round(peak_rss_mb()),
            "largest_worker": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
        },
        "goal": {"seconds": 300, "peak_rss_mb": 4096},
        "headline": {
            name: {
                "time_to_first_job_p50_s": entry["time_to_first_job_s"]["p50"],
                "wasted_core_hours": round(entry["wasted_core_hours"]),
                "first_attempt_success": entry["first_attempt_success"],
            }
            for name, entry in document["strategies"].items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--db", help="an existing history (default: generate --tasks)")
    parser.add_argument("--bundle", type=Path, help="real predictions (default: oracle)")
    parser.add_argument("--workdir", type=Path, default=Path("scoutless-work/bench"))
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--workers", type=int, default=2, help="strategies in parallel")
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    args.workdir.mkdir(parents=True, exist_ok=True)
    settings = get_settings()
    replay_cfg = settings.replay.model_copy(update={"workers": args.workers})
    settings = settings.model_copy(update={"replay": replay_cfg})
    phases: dict[str, float] = {}

    started = time.perf_counter()
    db = args.db or cached_history(args.tasks, args.workdir, args.seed)
    phases["history_s"] = time.perf_counter() - started

    started, cpu_started = time.perf_counter(), cpu_seconds()
    work, features = workload_from_db(db, settings)
    phases["load_s"] = time.perf_counter() - started
    measured = {"rss_load": peak_rss_mb()}

    started = time.perf_counter()
    if args.bundle:
        from scoutless.bundle import load_bundle

        predictor = load_bundle(args.bundle)
        predicted = predicted_values(predictor, features, work.task_ids)
        bins = predictor.bins
    else:
        predicted = oracle_values(work, settings)
        bins = load_bins()
    phases["predict_s"] = time.perf_counter() - started

    per_strategy: dict[str, float] = {}
    started_replay = time.perf_counter()
    results = run_strategies(
        work, settings.replay, settings, predicted,
        on_done=lambda name, s: per_strategy.__setitem__(name, s),
    )  # fmt: skip
    phases["replay_s"] = time.perf_counter() - started_replay

    started = time.perf_counter()
    document = replay_document(
        results, work, true_classes(work, settings, bins), settings.replay, {}
    )
    phases["metrics_s"] = time.perf_counter() - started
    measured["cpu_s"] = cpu_seconds() - cpu_started  # this process; children below
    measured["children_cpu_s"] = round(children_cpu_seconds(), 1)
    measured["workers"] = args.workers
    predictions = "bundle" if args.bundle else "oracle"
    result = report(work, results, document, phases, per_strategy, measured, predictions)
    emit(result, args.out, loop_before, indent=1)


if __name__ == "__main__":
    main()
