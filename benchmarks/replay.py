"""Replay cost: the six strategies against the three-strategy replay, in one run; prints JSON.

Goals (issue 29): on 100k tasks (~2.6M jobs) the six strategies (scouts, predicted,
hybrid, selective, bayes, oracle: their allocations, replays and metrics) cost at most
2.5 times the three-strategy replay (scouts, predicted, hybrid) measured in the same run,
and the run stays within 4 GB. Earlier goal (issue 10): the three in ≤ 5 min.

    python benchmarks/replay.py --tasks 100000 --bundle scoutless-work/bundle
    python benchmarks/replay.py --db sqlite:///history.sqlite --bundle bundle/ --out results/replay.json

``--sizes 20000,50000,100000 --seeds 3`` measures the yardstick instead (issue 37): one
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
from scoutless.cli.data import synthetic_values
from scoutless.config import STRATEGY_NAMES, Settings, get_settings
from scoutless.replay.checks import METRICS, model_misses, reference_bound, value_at
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


PRICED = "priced_total_core_hours"
#: what a run keeps of a strategy's replay.json entry
KEPT = (*(path for _, path, _ in METRICS), "priced_components", "priced_loads",
        "tasks_broken", "tasks_exhausted")  # fmt: skip


def demo_folder(size: int, workdir: Path, seed: int) -> Path:
    """The size's demo (generated and trained once, xgb only)."""
    folder = workdir / f"demo_{size}_{seed}"
    if not (folder / "bundle").exists() or not (folder / "table.parquet").exists():
        from scoutless.cli.demo import demo

        demo(workdir=folder, tasks=size, seed=seed, models="xgb", max_epochs=None)
    return folder


def compact(entry: dict[str, Any]) -> dict[str, Any]:
    """A strategy's figures a run keeps (the CDFs and breakdowns stay in replay.json)."""
    out: dict[str, Any] = {}
    for path in KEPT:
        key = path.split(".")[0]
        if key in entry:
            out[key] = entry[key]
    return out


def one_run(folder: Path, settings: Settings, seed: int, share: float) -> dict[str, Any]:
    """One replay of a seeded sample of the demo's test tasks: compact figures + checks."""
    from scoutless.bundle import load_bundle
    from scoutless.cli.data import synthetic_values
    from scoutless.history.table import TrainingTable
    from scoutless.replay.runner import replay_history

    table = TrainingTable.load(folder / "table.parquet")
    _, test = table.split(table.default_split)
    ids = test["jeditaskid"].to_numpy()
    started = time.perf_counter()
    document = replay_history(
        f"sqlite:///{(folder / 'history.sqlite').resolve()}", load_bundle(folder / "bundle"),
        folder / f"replay_seed{seed}", settings, n_tasks=max(1, round(share * len(ids))),
        seed=seed, only=ids, read_truth=synthetic_values,
    )  # fmt: skip
    return {
        "tasks": document["workload"]["tasks"],
        "jobs": document["workload"]["jobs"],
        "pool_cores": document["config"]["pool_cores"],
        "seconds": round(time.perf_counter() - started, 1),
        "strategies": {n: compact(e) for n, e in document["strategies"].items()},
        "ranking": document["ranking"],
        "checks": document["checks"],
    }


def _figure(run: dict[str, Any], name: str, path: str) -> float | None:
    value = value_at(run["strategies"].get(name), path)
    return float(value) if isinstance(value, int | float) else None


def spread(runs: list[dict[str, Any]], name: str, path: str) -> dict[str, float | None]:
    """Mean and standard deviation over the seeds (None where a seed lacks the figure)."""
    values = [_figure(r, name, path) for r in runs]
    if not values or any(v is None for v in values):
        return {"mean": None, "sd": None}
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "sd": float(arr.std(ddof=1)) if len(arr) > 1 else 0.0}


def hybrid_rows(runs: list[dict[str, Any]], means: dict[str, Any]) -> list[dict[str, Any]]:
    """Per metric the hybrid's mean against the scouts', the seeds it held in, and which
    reference does worse than the scouts too (``reference_bound`` on the means)."""
    rows = []
    for label, path, better in METRICS:
        h, s = spread(runs, "hybrid", path), spread(runs, "scouts", path)
        if h["mean"] is None or s["mean"] is None:
            continue
        holds = [
            (a <= b if better == "lower" else a >= b)
            for a, b in ((_figure(r, "hybrid", path), _figure(r, "scouts", path)) for r in runs)
            if a is not None and b is not None
        ]
        met = h["mean"] <= s["mean"] if better == "lower" else h["mean"] >= s["mean"]
        rows.append({"metric": label, "figures": {"hybrid": h, "scouts": s},
                     "goal": f"hybrid {'≤' if better == 'lower' else '≥'} scouts (mean)",
                     "seeds_met": f"{sum(holds)}/{len(holds)}", "met": met,
                     "bounded_by": reference_bound(means, path, better, "scouts")})  # fmt: skip
    return rows


def bound_rows(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = list(runs[0]["strategies"]) if runs else []
    pairs = [("oracle", n) for n in names if n != "oracle" and "oracle" in names]
    if "bayes" in names and "predicted" in names:
        pairs.append(("bayes", "predicted"))
    rows = []
    for bound, other in pairs:
        b, o = spread(runs, bound, PRICED), spread(runs, other, PRICED)
        if b["mean"] is None or o["mean"] is None:
            continue
        tolerance = max(b["sd"] or 0.0, o["sd"] or 0.0)
        rows.append({"metric": "priced total (core·h)", "figures": {bound: b, other: o},
                     "goal": f"{bound} ≤ {other} within the seeds' spread (±{tolerance:,.0f})",
                     "met": b["mean"] - o["mean"] <= tolerance})  # fmt: skip
    return rows


def nested(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"a.b": x}`` as ``{"a": {"b": x}}``: a strategy's means in replay.json's shape."""
    out: dict[str, Any] = {}
    for path, value in flat.items():
        *parents, leaf = path.split(".")
        node = out
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return out


def size_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per size: each strategy's mean of every metric (replay.json's shape), its standard
    deviation over the seeds (``spread``, by dotted path), and the checks."""
    names = list(runs[0]["strategies"]) if runs else []
    figures = {n: {path: spread(runs, n, path) for _, path, _ in METRICS} for n in names}
    order = sorted(names, key=lambda n: figures[n][PRICED]["mean"] or float("inf"))
    means = {n: nested({p: f["mean"] for p, f in figures[n].items()}) for n in names}
    hybrid = hybrid_rows(runs, means) if {"hybrid", "scouts"} <= set(names) else []
    bounds = bound_rows(runs)
    return {
        "seeds": len(runs),
        "ranking": order,
        "strategies": means,
        "spread": {n: {p: f["sd"] for p, f in figures[n].items()} for n in names},
        "checks": {
            "hybrid_vs_scouts": {
                "rows": hybrid,
                "all_met": all(r["met"] for r in hybrid),
                "model_misses": model_misses(hybrid),
            },
            "bounds": {"rows": bounds, "all_met": all(r["met"] for r in bounds)},
        },
    }


def sizes_report(
    sizes: list[int], seeds: int, workdir: Path, settings: Settings, share: float, demo_seed: int
) -> dict[str, Any]:
    """``runs[size][seed]`` and ``sizes[size]`` (module docstring)."""
    runs: dict[str, dict[str, Any]] = {}
    summary: dict[str, Any] = {}
    for size in sorted(sizes, reverse=True):  # the largest first: the headline's figures
        folder = demo_folder(size, workdir, demo_seed)
        runs[str(size)] = {str(s): one_run(folder, settings, s, share) for s in range(seeds)}
        summary[str(size)] = size_summary(list(runs[str(size)].values()))
    return {
        "benchmark": "replay_sizes",
        "policy": settings.replay.policy,
        "share": share,
        "allocation": settings.allocation.model_dump(),
        "target_utilisation": settings.replay.target_utilisation,
        "sizes": summary,
        "runs": runs,
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
    add_out(parser)
    return parser.parse_args()


def recheck(path: Path) -> None:
    """A ``--sizes`` result's per-size summaries and checks computed again from the runs it
    keeps, written back in place (atomically): a new check reaches earlier runs without
    replaying them. The runs and the machine record are left as they were."""
    text = path.read_text()
    document = json.loads(text)
    second = text.splitlines()[1] if text.count("\n") > 1 else ""
    indent = len(second) - len(second.lstrip(" ")) or 1  # the file's own layout
    if "runs" not in document:
        raise SystemExit(f"{path}: not a --sizes result (no 'runs')")
    document["sizes"] = {
        size: size_summary(list(runs.values())) for size, runs in document["runs"].items()
    }
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(
        json.dumps(document, indent=indent, default=float, ensure_ascii=text.isascii()) + "\n"
    )
    staging.replace(path)


def main() -> None:
    args = parse()
    if args.recheck is not None:
        recheck(args.recheck)
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
