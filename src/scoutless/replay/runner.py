"""Wiring: history → workload → allocations → each strategy's replay → replay.json.

``replay.json``::

    {"strategies": {"scouts"|"predicted"|"hybrid"|"selective"|"bayes"|"oracle": {
      "priced_total_core_hours", "priced_components": {kills, memory_slack, ...},
      "priced_loads": {long_queue, himem} (replay/priced.py),
      "time_to_first_job_s": {"p50", "p90"}, "task_completion_s": {"p50", "p90"},
      "first_attempt_success", "memory_kills", "walltime_kills", "retries_per_job",
      "wasted_core_hours", "used_core_hours", "memory_slack_gb_hours", "tasks_broken",
      "tasks_exhausted", ... "by_class", "by_kind", "cdf"}},
     "ranking": [{"strategy", "priced_total_core_hours"}, ...] (least first),
     "checks": {...} (replay/checks.py), "skipped": {strategy: why},
     "config": {...}, "workload": {...}}

It is written to a temporary file and renamed, so an interrupted replay leaves no partial
file (and any previous one intact).
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scoutless.atomic import atomic_write_text
from scoutless.config import AllocationSettings, Settings
from scoutless.policy_names import VALUE_POLICIES
from scoutless.replay.canary import Rehearsal, arm_figures
from scoutless.replay.checks import replay_checks
from scoutless.replay.config import ReplaySettings
from scoutless.replay.engine import Replay
from scoutless.replay.metrics import strategy_metrics
from scoutless.replay.plan import StrategyPlan
from scoutless.replay.pool import SlotPool, pool_cores
from scoutless.replay.priced import priced_total
from scoutless.replay.result import ReplayResult
from scoutless.replay.strategies import SOURCE_OF, make_plans
from scoutless.replay.submission import (
    ALLOCATED_TARGETS,
    Submission,
    choice_summary,
    measured_values,
    model_submission,
    oracle_submission,
    truth_submission,
)
from scoutless.replay.workload import TaskEstimator, Workload
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import value_col

if TYPE_CHECKING:
    from scoutless.allocation.allocate import ScoutChoice
    from scoutless.allocation.values import ValueDistribution
    from scoutless.bundle import Predictor

REPLAY_JSON = "replay.json"


#: the generator's true value distribution per target of some task ids (rows in that
#: order), or None when the history holds no synthetic truth; the CLI supplies it
TruthReader = Callable[[str, np.ndarray], "Mapping[str, ValueDistribution] | None"]


def run_strategies(
    work: Workload,
    cfg: ReplaySettings,
    settings: Settings,
    submissions: Mapping[str, Submission],
    on_done: Callable[[str, float], None] | None = None,
    names: list[str] | None = None,
    record: bool = False,
) -> dict[str, ReplayResult]:
    """Replay every configured strategy (or ``names``) on the same workload and pool size;
    ``record``: the canary keeps every attempt (for ``--write-history``)."""
    plans = make_plans(work, cfg, submissions, names, canary_seed=settings.rollout.seed,
                       settings=settings)  # fmt: skip
    plans = [replace(p, record=record and p.name == "canary") for p in plans]
    return run_plans(work, plans, cfg, settings, on_done)


def rehearsal_of(result: ReplayResult, work: Workload, settings: Settings,
                 meta: Mapping[str, Any]) -> Rehearsal:  # fmt: skip
    """The replayed canary with its arms, their reasons and the predictions its log holds."""
    cfg, draw = settings.replay, result.canary
    if draw is None:
        raise ValueError(f"strategy {result.name!r} is not a canary")
    harm = None if cfg.canary_harm is None else cfg.canary_harm.model_dump()
    return Rehearsal(
        work, result, draw.arms, draw.reasons, draw.ram, draw.cputime,
        {**meta, "share": cfg.canary_share, "seed": draw.seed, "arm": cfg.canary_arm,
         "harm": harm}, draw.scouted,
    )  # fmt: skip


def submissions_for(
    names: list[str],
    work: Workload,
    settings: Settings,
    *,
    predictor: Predictor | None,
    features: pd.DataFrame | None,
    truth: Mapping[str, ValueDistribution] | None,
    policy: str,
    alpha: float,
) -> tuple[dict[str, Submission], dict[str, str]]:
    """The submissions the strategies ``names`` allocate from, and why any is skipped."""
    sources = {SOURCE_OF[n] for n in names if n in SOURCE_OF}
    out: dict[str, Submission] = {}
    skipped: dict[str, str] = {}
    if "model" in sources and predictor is not None and features is not None:
        valued = all(predictor.has_values(t) for t in ALLOCATED_TARGETS)
        choosers = [n for n in names if n == "selective"
                    or (n == "canary" and settings.replay.canary_arm == "selective")]  # fmt: skip
        for name in choosers if not valued else []:
            skipped[name] = f"bundle {predictor.version} has no value models to price with"
        out["model"] = model_submission(
            predictor, features, work, settings, policy=policy, alpha=alpha,
            choose_scouts=bool(choosers) and valued,
        )  # fmt: skip
    if "bayes" in sources:
        if truth is None:
            skipped["bayes"] = "the history holds no synthetic truth (bayes needs the generator's)"
        elif policy not in VALUE_POLICIES:
            skipped["bayes"] = f"policy {policy!r} chooses a class; bayes needs cost or value"
        else:
            out["bayes"] = truth_submission(truth, work, settings, policy=policy, alpha=alpha)
    if "oracle" in sources:
        out["oracle"] = oracle_submission(work, settings)
    return out, skipped


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
    out = {}
    for target, values in measured_values(work, settings).items():
        if target not in bins:
            continue
        b = bins[target]
        labels = np.array([*b.labels, "unknown"], dtype=object)
        out[target] = labels[b.classify(values)]  # -1 (no value) picks "unknown"
    return out


def replay_document(
    results: Mapping[str, ReplayResult],
    work: Workload,
    classes: Mapping[str, np.ndarray],
    cfg: ReplaySettings,
    meta: Mapping[str, Any],
    *,
    skipped: Mapping[str, str] | None = None,
    choice: ScoutChoice | None = None,
    rehearsal: Rehearsal | None = None,
    allocation: AllocationSettings | None = None,
) -> dict[str, Any]:
    """replay.json: every strategy's metrics and priced total (at ``allocation``'s prices,
    the defaults where None), the strategies ranked by it, the checks between them,
    config, workload; a canary's per-arm figures in the impact's definitions
    (``replay/canary.py``)."""
    cores = pool_cores(work, cfg)
    allocation = allocation or AllocationSettings()
    strategies = {
        name: {**strategy_metrics(result, work, classes, cfg.cdf_points),
               **priced_total(result, work, cfg, allocation, cores)}
        for name, result in results.items()
    }  # fmt: skip
    for name, result in results.items():
        if result.sizing:  # an online sizer's account
            strategies[name]["sizing"] = result.sizing
    if choice is not None and "selective" in strategies:
        strategies["selective"]["scout_choice"] = choice_summary(choice)
    if rehearsal is not None and "canary" in strategies:
        strategies["canary"]["arms"] = arm_figures(rehearsal)
        strategies["canary"]["rollout"] = {
            k: rehearsal.meta[k] for k in ("share", "seed", "arm", "harm")
        }
    return {
        "strategies": strategies,
        "ranking": ranking(strategies),
        "checks": replay_checks(strategies),
        "skipped": dict(skipped or {}),
        "config": {
            **cfg.model_dump(),
            **meta,
            "pool_cores": cores,
            "allocation": allocation.model_dump(),
        },
        "workload": {
            "tasks": work.n_tasks,
            "jobs": work.n_jobs,
            "scouts": int(work.is_scout.sum()),
        },
    }


def ranking(strategies: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The strategies from the least priced total to the most (the headline's order)."""
    ranked = sorted(strategies, key=lambda n: strategies[n]["priced_total_core_hours"])
    return [{"strategy": n, "priced_total_core_hours": strategies[n]["priced_total_core_hours"]}
            for n in ranked]  # fmt: skip


def write_json_atomic(path: Path, document: Mapping[str, Any]) -> Path:
    """Write to a hidden temporary sibling, then rename: never a partial file."""
    return atomic_write_text(Path(path), json.dumps(document, indent=1, default=float))


def replay_history(
    db_url: str,
    predictor: Predictor | None,
    out: Path,
    settings: Settings,
    *,
    policy: str | None = None,
    alpha: float | None = None,
    n_tasks: int | None = None,
    seed: int = 42,
    only: np.ndarray | None = None,
    read_truth: TruthReader | None = None,
    on_step: Callable[[str], None] | None = None,
    rehearse: Callable[[Rehearsal], None] | None = None,
) -> dict[str, Any]:
    """The whole replay of a history database: returns replay.json's document, written to
    ``out/replay.json`` atomically. ``read_truth`` (the CLI's, on a synthetic history)
    feeds the bayes strategy; without it bayes is skipped, and replay.json says why.
    ``rehearse`` receives the replayed canary with every attempt (``--write-history``)."""
    from scoutless.replay.history import workload_from_db

    cfg = settings.replay
    policy, alpha = policy or cfg.policy, alpha or cfg.alpha or settings.allocation.alpha
    say = on_step or (lambda _text: None)
    say("read the history")
    work, features = workload_from_db(db_url, settings, n_tasks=n_tasks, seed=seed, only=only)
    say(f"{work.n_tasks:,} tasks, {work.n_jobs:,} jobs")
    truth = None
    if read_truth is not None and "bayes" in cfg.strategies:
        truth = read_truth(db_url, work.task_ids)
    say(f"allocate {work.n_tasks:,} tasks ({policy} policy, alpha={alpha})")
    subs, skipped = submissions_for(
        list(cfg.strategies), work, settings, predictor=predictor, features=features,
        truth=truth, policy=policy, alpha=alpha,
    )  # fmt: skip
    for name, why in skipped.items():
        say(f"{name} skipped: {why}")
    names = [n for n in cfg.strategies if n not in skipped]
    if rehearse is not None and "canary" not in names:
        why = f" (skipped: {skipped['canary']})" if "canary" in skipped else ""
        raise ValueError(
            f"--write-history writes the canary's replay: add 'canary' to the strategies{why}"
        )
    results = run_strategies(
        work, cfg, settings, subs, names=names, record=rehearse is not None,
        on_done=lambda name, s: say(f"{name} replayed in {s:.1f} s"),
    )  # fmt: skip
    meta = {"policy": policy, "alpha": alpha, "bundle": getattr(predictor, "version", None),
            "seed": seed}  # fmt: skip
    document, rehearsal = _document(results, work, settings, predictor, subs, skipped, meta)
    if rehearse is not None and rehearsal is not None:
        say("write the canary's history")
        rehearse(rehearsal)
    write_json_atomic(Path(out) / REPLAY_JSON, document)
    return document


def _document(
    results: Mapping[str, ReplayResult],
    work: Workload,
    settings: Settings,
    predictor: Predictor | None,
    subs: Mapping[str, Submission],
    skipped: Mapping[str, str],
    meta: Mapping[str, Any],
) -> tuple[dict[str, Any], Rehearsal | None]:
    """replay.json's document of a history replay, and its canary when one ran."""
    from scoutless.targets.bins import load_bins

    bins = predictor.bins if predictor is not None else load_bins(settings.bins_file)
    choice = subs["model"].choice if "model" in subs else None
    rehearsal = None
    if "canary" in results:
        rehearsal = rehearsal_of(results["canary"], work, settings, meta)
    document = replay_document(
        results, work, true_classes(work, settings, bins), settings.replay, meta,
        skipped=skipped, choice=choice, rehearsal=rehearsal, allocation=settings.allocation,
    )  # fmt: skip
    return document, rehearsal


def replay_trace(
    table_path: Path,
    predictor: Predictor | None,
    out: Path,
    settings: Settings,
    *,
    policy: str | None = None,
    alpha: float | None = None,
    on_step: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """The replay of an imported trace's test rows (request, predicted, selective, online,
    oracle): replay.json."""
    from scoutless.history.table import TrainingTable
    from scoutless.replay.traces import trace_history, trace_plans, trace_rows, trace_workload

    cfg = settings.replay
    policy, alpha = policy or cfg.policy, alpha or cfg.alpha or settings.allocation.alpha
    say = on_step or (lambda _text: None)
    table = TrainingTable.load(table_path)
    rows = trace_rows(table)
    work = trace_workload(rows, settings)
    say(f"{work.n_tasks:,} trace jobs (the table's test rows)")
    plans, notes = trace_plans(rows, settings, predictor, policy=policy, alpha=alpha, work=work,
                               history=trace_history(table))  # fmt: skip
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
    document = replay_document(results, work, classes, cfg, meta,
                               allocation=settings.allocation)  # fmt: skip
    document["kill_caps"] = notes.pop("kill_caps")  # per target, what the decisions kept
    if "selective" in document["strategies"] and notes:
        document["strategies"]["selective"].update(notes)
    write_json_atomic(Path(out) / REPLAY_JSON, document)
    return document
