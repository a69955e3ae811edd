"""Replay cost: the six strategies against the three-strategy replay, in one run; prints JSON.

Goals: on 100k tasks (~2.6M jobs) the six strategies (scouts, predicted,
hybrid, selective, bayes, oracle: their allocations, replays and metrics) cost at most
2.5 times the three-strategy replay (scouts, predicted, hybrid) measured in the same run,
and the run stays within 4 GB.

    python benchmarks/replay.py --tasks 100000 --bundle scoutless-work/bundle
    python benchmarks/replay.py --db sqlite:///history.sqlite --bundle bundle/ --out results/replay.json

``--sizes 20000,50000,100000 --seeds 3`` measures the yardstick instead: one
demo per size (history, table, an xgb bundle: ``scoutless demo --models xgb``, kept in
``--workdir`` and reused), then per seed a replay of a seeded sample (``--share`` of the
demo's test tasks: the replay's ``--seed`` picks it, so each seed has its own tasks and
its own auto-sized pool); ``--utilisation 0.8`` replays on a smaller pool.
``runs[size][seed]`` keeps each replay's per-strategy figures, priced total and checks;
``sizes[size]`` the strategies' mean and spread over the seeds and the checks on them:
``hybrid_vs_scouts`` (per metric the hybrid's mean against the scouts', and in how many
seeds it held) and ``bounds`` (``oracle`` ≤ every strategy and ``bayes`` ≤ ``predicted``
on the priced total, met where the bound's mean exceeds the other's by no more than the
larger of their standard deviations over the seeds). Each row carries both sides'
figures, the goal and whether it is met; the goals are read, never tuned to. An hour or
two at those sizes: a benchmark, never CI.

``--bundle`` gives the model's strategies a real bundle (e.g. the demo's); without one,
predicted and hybrid get a stand-in (each task's true class's recommended value under the
default bins) and selective has nothing to decide on, so the six are five and the ratio
says little. bayes reads the generator's truth of a synthetic history. The JSON carries
the machine record of ``benchmarks/record.py`` (cores, a reference loop's time before and
after, the date, the command), so a figure can be read against its machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from typing import Any

import numpy as np

from record import add_out, emit, reference_loop_s
from replay_earlier import merge_report
from replay_sizes import recheck, sizes_report
from scoutless.cli.data import synthetic_values
from scoutless.config import STRATEGY_NAMES, Settings, get_settings
from scoutless.replay.history import workload_from_db
from scoutless.replay.runner import replay_document, run_strategies, submissions_for, true_classes
from scoutless.replay.submission import Submission, measured_values
from scoutless.replay.workload import Workload
from scoutless.targets.bins import load_bins

THREE = ["scouts", "predicted", "hybrid"]
GOAL_RATIO, GOAL_RSS_MB = 2.5, 4096


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0


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


def stand_in(work: Workload, settings: Settings) -> Submission:
    """Recommended value of each task's true class (default bins): predictions without a
    bundle, to time the replay alone."""
    bins = load_bins(targets=["memory", "cputime"])
    values = {
        target: np.asarray(bins[target].recommended)[np.maximum(bins[target].classify(v), 0)]
        for target, v in measured_values(work, settings).items()
    }
    return Submission.of(values)


def replay_of(
    names: list[str], work: Workload, features: Any, settings: Settings, args: argparse.Namespace
) -> tuple[dict[str, Any], dict[str, float]]:
    """Allocations, replays and metrics of ``names``: replay.json's document and timings."""
    started = time.perf_counter()
    truth = synthetic_values(args.db_url, work.task_ids) if "bayes" in names else None
    subs, skipped = submissions_for(
        names, work, settings, predictor=args.predictor, features=features, truth=truth,
        policy=settings.replay.policy, alpha=settings.allocation.alpha,
    )  # fmt: skip
    if args.predictor is None:
        subs["model"] = stand_in(work, settings)
        skipped["selective"] = "no --bundle: nothing to decide on"
    ran = [n for n in names if n not in skipped]
    allocate_s = time.perf_counter() - started
    per_strategy: dict[str, float] = {}
    results = run_strategies(work, settings.replay, settings, subs, names=ran,
                             on_done=per_strategy.__setitem__)  # fmt: skip
    replay_s = time.perf_counter() - started - allocate_s
    document = replay_document(results, work, true_classes(work, settings, args.bins),
                               settings.replay, {}, skipped=skipped)  # fmt: skip
    seconds = {"allocate_s": allocate_s, "replay_s": replay_s,
               "total_s": time.perf_counter() - started}  # fmt: skip
    document["seconds_per_strategy"] = per_strategy
    document["events"] = sum(r.n_events for r in results.values())
    return document, seconds


def summary(label: str, document: dict[str, Any], seconds: dict[str, float]) -> dict[str, Any]:
    return {
        "strategies": list(document["strategies"]),
        "skipped": document["skipped"],
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
        "replay_seconds_per_strategy": {
            k: round(v, 1) for k, v in document["seconds_per_strategy"].items()
        },
        "events_per_s": round(document["events"] / max(seconds["replay_s"], 1e-9), 1),
        "headline": {
            name: {
                "time_to_first_job_p50_s": entry["time_to_first_job_s"]["p50"],
                "task_completion_p90_s": entry["task_completion_s"]["p90"],
                "wasted_core_hours": round(entry["wasted_core_hours"]),
                "memory_slack_gb_hours": round(entry["memory_slack_gb_hours"]),
                "first_attempt_success": entry["first_attempt_success"],
            }
            for name, entry in document["strategies"].items()
        },
        **({"checks": document["checks"]} if label == "six" else {}),
    }


def verdict(ratio: float, rss_mb: float) -> dict[str, Any]:
    """Each goal: measured, goal, met."""
    return {
        "time_ratio": {"measured": round(ratio, 2), "goal": GOAL_RATIO, "met": ratio <= GOAL_RATIO},
        "peak_rss_mb": {"measured": rss_mb, "goal": GOAL_RSS_MB, "met": rss_mb <= GOAL_RSS_MB},
    }


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--db", help="an existing history (default: generate --tasks)")
    parser.add_argument("--bundle", type=Path, help="real predictions (e.g. the demo's)")
    parser.add_argument("--workdir", type=Path, default=Path("scoutless-work/bench"))
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--workers", type=int, default=2, help="strategies in parallel")
    parser.add_argument("--sizes", help="comma-separated demo sizes: the yardstick instead")
    parser.add_argument("--seeds", type=int, default=3, help="--sizes: replay seeds per size")
    parser.add_argument("--share", type=float, default=0.9,
                        help="--sizes: share of the test tasks each seed samples")  # fmt: skip
    parser.add_argument("--utilisation", type=float, help="--sizes: replay.target_utilisation")
    parser.add_argument("--recheck", type=Path,
                        help="a --sizes result: its checks computed again from its runs, "
                             "rewritten in place (no replay)")  # fmt: skip
    parser.add_argument("--merge", type=Path, nargs="+",
                        help="--sizes results merged into one (replay_earlier.py), no replay")
    parser.add_argument("--earlier", action="append", default=[],
                        help="--merge: LABEL=PATH, an earlier --sizes result shown beside it")
    parser.add_argument("--describe", action="append", default=[],
                        help="--merge: LABEL=TEXT, what that earlier decision was")
    parser.add_argument("--note", default="", help="--merge: the machine record's note")
    add_out(parser)
    return parser.parse_args()


def main() -> None:
    args = parse()
    if args.recheck is not None:
        recheck(args.recheck)
        return
    if args.merge:
        report = merge_report(args.merge, args.earlier, args.describe, args.note)
        text = json.dumps(report, indent=1, default=float)
        if args.out:
            args.out.write_text(text + "\n")
        print(text)
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    loop_before = reference_loop_s()
    settings = get_settings()
    update: dict[str, Any] = {"workers": args.workers}
    if args.utilisation is not None:
        update["target_utilisation"] = args.utilisation
    replay_cfg = settings.replay.model_copy(update=update)
    settings = settings.model_copy(update={"replay": replay_cfg})
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
        report = sizes_report(sizes, args.seeds, args.workdir, settings, args.share, args.seed)
        emit(report, args.out, loop_before, indent=1, default=float)
        return

    started = time.perf_counter()
    args.db_url = args.db or cached_history(args.tasks, args.workdir, args.seed)
    history_s = time.perf_counter() - started
    started = time.perf_counter()
    work, features = workload_from_db(args.db_url, settings)
    load_s, rss_load = time.perf_counter() - started, peak_rss_mb()
    args.predictor = None
    if args.bundle:
        from scoutless.bundle import load_bundle

        args.predictor = load_bundle(args.bundle)
    args.bins = args.predictor.bins if args.predictor is not None else load_bins()

    three, three_s = replay_of(THREE, work, features, settings, args)
    six, six_s = replay_of(list(STRATEGY_NAMES), work, features, settings, args)
    ratio = six_s["total_s"] / three_s["total_s"]
    rss = {"after_load": round(rss_load), "end": round(peak_rss_mb()),
           "largest_worker": round(worker_rss_mb())}  # fmt: skip
    report = {
        "benchmark": "replay",
        "tasks": work.n_tasks,
        "jobs": work.n_jobs,
        "policy": settings.replay.policy,
        "predictions": "bundle" if args.predictor is not None else "stand-in (true class)",
        "workers": args.workers,
        "seconds": {"history_s": round(history_s, 1), "load_s": round(load_s, 1)},
        "six": summary("six", six, six_s),  # first: the docs' results page shows these
        "three": summary("three", three, three_s),
        "peak_rss_mb": rss,
        "verdict": verdict(ratio, max(rss["end"], rss["largest_worker"])),
    }
    emit(report, args.out, loop_before, indent=1, default=float)


if __name__ == "__main__":
    main()
