"""Wiring: history → workload → predictions → each strategy's replay → replay.json.

``replay.json``::

    {"strategies": {"scouts"|"predicted"|"hybrid": {"time_to_first_job_s": {"p50", "p90"},
      "task_completion_s": {"p50", "p90"}, "first_attempt_success", "memory_kills",
      "walltime_kills", "retries_per_job", "wasted_core_hours", "used_core_hours",
      "memory_slack_gb_hours", "tasks_broken", "tasks_exhausted", ... "by_class", "by_kind",
      "cdf"}}, "config": {...}, "workload": {...}}

It is written to a temporary file and renamed, so an interrupted replay leaves no partial
file (and any previous one intact).
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from scoutless.atomic import atomic_write_text
from scoutless.config import Settings
from scoutless.replay.config import ReplaySettings
from scoutless.replay.engine import Replay, ReplayResult, StrategyPlan
from scoutless.replay.metrics import strategy_metrics
from scoutless.replay.pool import SlotPool, pool_cores
from scoutless.replay.strategies import make_plans
from scoutless.replay.workload import TaskEstimator, Workload
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import value_col

if TYPE_CHECKING:
    from scoutless.bundle import Predictor

REPLAY_JSON = "replay.json"


def run_strategies(
    work: Workload,
    cfg: ReplaySettings,
    settings: Settings,
    predicted: Mapping[str, np.ndarray] | None,
    on_done: Callable[[str, float], None] | None = None,
) -> dict[str, ReplayResult]:
    """Replay every configured strategy on the same workload and pool size."""
    return run_plans(work, make_plans(work, cfg, predicted), cfg, settings, on_done)


def run_plans(
    work: Workload,
    plans: list[StrategyPlan],
    cfg: ReplaySettings,
    settings: Settings,
    on_done: Callable[[str, float], None] | None = None,
) -> dict[str, ReplayResult]:
    """Replay the given plans, each on a fresh pool of the same size; with ``cfg.workers`` > 1
    the strategies run in forked processes (they share nothing but the read-only workload)."""
    cores = pool_cores(work, cfg)
    workers = min(cfg.workers, len(plans))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return {plan.name: _timed(work, plan, cfg, settings, cores, on_done) for plan in plans}
    context = multiprocessing.get_context("fork")  # children see the workload without a copy
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {
            plan.name: pool.submit(_timed, work, plan, cfg, settings, cores, None) for plan in plans
        }
        results = {name: future.result() for name, future in futures.items()}
    for name, result in results.items():
        if on_done is not None:
            on_done(name, result.seconds)
    return results


def _timed(
    work: Workload,
    plan: StrategyPlan,
    cfg: ReplaySettings,
    settings: Settings,
    cores: Mapping[str, int],
    on_done: Callable[[str, float], None] | None,
) -> ReplayResult:
    started = time.perf_counter()
    pool = SlotPool(cfg.resource_types, cores)
    result = Replay(work, plan, cfg, pool, TaskEstimator(work, settings)).run()
    result.seconds = time.perf_counter() - started
    if on_done is not None:
        on_done(plan.name, result.seconds)
    return result


def true_classes(
    work: Workload, settings: Settings, bins: Mapping[str, TargetBins]
) -> dict[str, np.ndarray]:
    """Each task's class label per allocated target, from all its units (the target code)."""
    ram, cpu = TaskEstimator(work, settings)(np.arange(work.n_jobs))
    out = {}
    for target, values in (("memory", ram), ("cputime", cpu)):
        if target not in bins:
            continue
        b = bins[target]
        v = np.array([values.get(t, np.nan) for t in range(work.n_tasks)])
        labels = np.array([*b.labels, "unknown"], dtype=object)
        out[target] = labels[b.classify(v)]  # -1 (no value) picks "unknown"
    return out


def replay_document(
    results: Mapping[str, ReplayResult],
    work: Workload,
    classes: Mapping[str, np.ndarray],
    cfg: ReplaySettings,
    meta: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "strategies": {
            name: strategy_metrics(result, work, classes, cfg.cdf_points)
            for name, result in results.items()
        },
        "config": {**cfg.model_dump(), **meta, "pool_cores": pool_cores(work, cfg)},
        "workload": {
            "tasks": work.n_tasks,
            "jobs": work.n_jobs,
            "scouts": int(work.is_scout.sum()),
        },
    }


def write_json_atomic(path: Path, document: Mapping[str, Any]) -> Path:
    """Write to a hidden temporary sibling, then rename: never a partial file."""
    return atomic_write_text(Path(path), json.dumps(document, indent=1, default=float))


def replay_history(
    db_url: str,
    predictor: Predictor | None,
    out: Path,
    settings: Settings,
    *,
    policy: str = "risk",
    alpha: float = 0.05,
    n_tasks: int | None = None,
    seed: int = 42,
    only: np.ndarray | None = None,
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The whole replay of a history database: returns replay.json's document, written to
    ``out/replay.json`` atomically."""
    from scoutless.replay.history import workload_from_db
    from scoutless.replay.strategies import predicted_values
    from scoutless.targets.bins import load_bins

    cfg = settings.replay
    say = on_step or (lambda _text: None)
    say("read the history")
    work, features = workload_from_db(db_url, settings, n_tasks=n_tasks, seed=seed, only=only)
    say(f"{work.n_tasks:,} tasks, {work.n_jobs:,} jobs")
    predicted = None
    if predictor is not None and set(cfg.strategies) - {"scouts"}:
        say(f"predict {work.n_tasks:,} tasks ({policy} policy, alpha={alpha})")
        predicted = predicted_values(predictor, features, work.task_ids, policy=policy, alpha=alpha)
    results = run_strategies(
        work, cfg, settings, predicted, on_done=lambda name, s: say(f"{name} replayed in {s:.1f} s")
    )
    bins = predictor.bins if predictor is not None else load_bins(settings.bins_file)
    meta = {
        "policy": policy,
        "alpha": alpha,
        "bundle": getattr(predictor, "version", None),
        "seed": seed,
    }
    document = replay_document(results, work, true_classes(work, settings, bins), cfg, meta)
    write_json_atomic(Path(out) / REPLAY_JSON, document)
    return document


def replay_trace(
    table_path: Path,
    predictor: Predictor | None,
    out: Path,
    settings: Settings,
    *,
    policy: str = "risk",
    alpha: float = 0.05,
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The replay of an imported trace's test rows (request vs predicted): replay.json."""
    from scoutless.history.table import TrainingTable
    from scoutless.replay.traces import trace_plans, trace_rows, trace_workload

    say = on_step or (lambda _text: None)
    table = TrainingTable.load(table_path)
    rows = trace_rows(table)
    work = trace_workload(rows, settings)
    say(f"{work.n_tasks:,} trace jobs (the table's test rows)")
    plans = trace_plans(rows, settings, predictor, policy=policy, alpha=alpha)
    cfg = settings.replay
    results = run_plans(
        work, plans, cfg, settings, on_done=lambda name, s: say(f"{name} replayed in {s:.1f} s")
    )
    classes = {
        t: np.array([*b.labels, "unknown"], dtype=object)[
            b.classify(rows[value_col(t)].to_numpy(dtype=float))
        ]
        for t, b in table.bins.items()
        if t in ("memory", "walltime") and value_col(t) in rows.columns
    }
    meta = {"policy": policy, "alpha": alpha, "bundle": getattr(predictor, "version", None),
            "source": table.source, "incumbent": "request"}  # fmt: skip
    document = replay_document(results, work, classes, cfg, meta)
    write_json_atomic(Path(out) / REPLAY_JSON, document)
    return document
