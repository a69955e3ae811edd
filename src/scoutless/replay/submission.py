"""What each strategy allocates at submission, per task: the replay's side of allocation/.

- **model** (predicted, hybrid, selective): the bundle's value distribution per target and
  its conformal levels, turned into a number by the replay's policy: ``cost`` (the least
  expected cost under the site's rules and prices, the default), ``value`` (the calibrated
  1 - alpha value), or a class policy (the recommended value of the class it chooses);
- **bayes**: the same rule fed the generator's true distribution of each task's value,
  with ``levels=None`` (exact: nothing to calibrate);
- **oracle**: each task's target value as PanDA defines it, from all its jobs (the target
  code, margins included): what the scouts would converge to on the whole task.

A task's job context (cores, job walltime, events per job, corePower, cpuEfficiency,
baseWalltime, jobs) comes from the workload; its job walltime from what that strategy
believes: the model's walltime median, or the truth's. Prices are the global ones with
the overrides of the task's standard resource type (SCORE or MCORE: the type is known at
submission, whether the job lands in a HIMEM slot is what the allocation decides).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scoutless.allocation.allocate import (
    Allocation,
    ScoutChoice,
    cost_allocation,
    selective,
    unseen_application,
    value_allocation,
)
from scoutless.allocation.context import JobContext, history_job_context
from scoutless.allocation.costs import walltime_limit_s
from scoutless.allocation.policies import make_policy
from scoutless.allocation.site import SiteRules
from scoutless.allocation.values import ConformalLevels, JobSpread, ValueDistribution
from scoutless.config import ReplaySettings, Settings
from scoutless.policy_names import VALUE_POLICIES
from scoutless.replay.site_rules import (
    WidthRules,
    chosen_loads,
    decision_rules,
    rules_of,
    with_loads,
)
from scoutless.replay.workload import TaskEstimator, Workload

if TYPE_CHECKING:
    from scoutless.bundle import Predictor

#: the targets a replay allocates from: ramCount (memory) and cpuTime (→ job walltime)
ALLOCATED_TARGETS: tuple[str, ...] = ("memory", "cputime")


@dataclass(frozen=True)
class Submission:
    """What one source of knowledge allocates at submission, per task."""

    ram: np.ndarray  # ramCount, MB/core (NaN: the replay's default)
    cputime: np.ndarray  # cpuTime, HS06·s/event (NaN: the queue's maxtime)
    #: per target, the value allocations behind ``ram``/``cputime`` (empty: class or oracle)
    allocations: Mapping[str, Allocation] = dataclasses.field(default_factory=dict)
    #: the selective strategy's choice (model only): which tasks are cheaper to scout
    choice: ScoutChoice | None = None

    @classmethod
    def of(cls, values: Mapping[str, np.ndarray]) -> Submission:
        """From a ``{"memory": …, "cputime": …}`` mapping of values per task."""
        return cls(np.asarray(values["memory"], float), np.asarray(values["cputime"], float))


def workload_context(work: Workload, wall_s: np.ndarray) -> JobContext:
    """Per task of the workload, the job the cost model prices
    (:func:`~scoutless.allocation.context.history_job_context`); ``wall_s`` per job."""
    return history_job_context(
        work.task, work.n_tasks, work.cores, work.nevents, work.core_power,
        work.cpu_efficiency, work.base_walltime_s, work.n_units, wall_s,
    )  # fmt: skip


def price_groups(cores: np.ndarray, cfg: ReplaySettings) -> list[tuple[str, np.ndarray]]:
    """(standard resource type, task rows) pairs: single-core tasks, then multi-core ones."""
    groups = []
    for multicore in (False, True):
        rows = np.flatnonzero((np.asarray(cores) > 1) == multicore)
        types = [(t.mb_per_core, name) for name, t in cfg.resource_types.items()
                 if t.multicore == multicore]  # fmt: skip
        if rows.size and types:
            groups.append((min(types)[1], rows))
    return groups


def stitch(parts: Sequence[tuple[np.ndarray, Any]], n: int) -> Any:
    """One dataclass of per-task arrays from parts that each cover some rows."""
    kind = type(parts[0][1])
    out = {}
    for field in dataclasses.fields(kind):
        if getattr(parts[0][1], field.name) is None:  # an optional array none carries
            out[field.name] = None
            continue
        first = np.asarray(getattr(parts[0][1], field.name))
        values = np.zeros(n, dtype=first.dtype)
        for rows, part in parts:
            values[rows] = getattr(part, field.name)
        out[field.name] = values
    return kind(**out)


def job_ratios(work: Workload, settings: Settings) -> dict[str, np.ndarray]:
    """Per unit, its need over its task's value (the target code on all the task's units):
    memory per core over ramCount; run time above baseWalltime over the run
    ``getJobMaxWalltime`` gives the task's cpuTime on the task's median job (so events,
    cores and site speed that differ from job to job are in the factor)."""
    values = measured_values(work, settings)
    job = workload_context(work, np.full(work.n_tasks, np.nan))
    per_core = np.maximum(work.need_mb - work.base_ram_mb[work.task], 0.0) / work.cores
    run_of_value = walltime_limit_s(values["cputime"], job, ()) - job.base_walltime_s
    above = work.wall_s - work.base_walltime_s[work.task]
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "memory": per_core / values["memory"][work.task],
            "cputime": above / run_of_value[work.task],
        }


def job_spreads(work: Workload, settings: Settings) -> dict[str, JobSpread]:
    """Per allocated target, the spread of a task's jobs around its value, learnt from the
    workload's jobs and pooled by task kind (:meth:`JobSpread.pooled`)."""
    points = settings.allocation.job_spread_points
    return {
        target: JobSpread.pooled(ratios, work.kind[work.task], work.kind, points)
        for target, ratios in job_ratios(work, settings).items()
    }


def cost_allocations(
    dists: Mapping[str, ValueDistribution],
    levels: Mapping[str, ConformalLevels | None],
    job: JobContext,
    settings: Settings,
    rules: SiteRules | WidthRules,
    spreads: Mapping[str, JobSpread] | None = None,
) -> dict[str, Allocation]:
    """The cost-aware allocation of every allocated target, priced per resource type
    (its prices, its width's rules), under the kill cap (``allocation.kill_cap``)."""
    alloc = settings.allocation
    out = {}
    for target in ALLOCATED_TARGETS:
        spread = (spreads or {}).get(target)
        parts = []
        for name, rows in price_groups(job.cores, settings.replay):
            width = rules_of(rules, settings.replay.resource_types[name].multicore)
            part = cost_allocation(
                target, dists[target].take(rows), levels.get(target), job.take(rows), width,
                alloc.prices_for(name), alloc.grid_points,
                spread=None if spread is None else spread.take(rows),
                max_kill_probability=alloc.kill_cap(target),
            )  # fmt: skip
            parts.append((rows, part))
        out[target] = stitch(parts, len(job))
    return out


def scout_choice(
    allocations: Mapping[str, Allocation],
    job: JobContext,
    settings: Settings,
    unknown: np.ndarray | None,
) -> ScoutChoice:
    """``allocation.selective`` per resource type's prices."""
    parts = []
    for name, rows in price_groups(job.cores, settings.replay):
        part = {t: _take(a, rows) for t, a in allocations.items()}
        seen = None if unknown is None else unknown[rows]
        parts.append(
            (rows, selective(part, job.take(rows), settings.allocation.prices_for(name), seen))
        )
    return stitch(parts, len(job))


def _take(allocation: Allocation, rows: np.ndarray) -> Allocation:
    return Allocation(**{f.name: None if getattr(allocation, f.name) is None
                         else getattr(allocation, f.name)[rows]
                         for f in dataclasses.fields(Allocation)})  # fmt: skip


def decide(
    dists: Mapping[str, ValueDistribution],
    levels: Mapping[str, ConformalLevels | None],
    job: JobContext,
    settings: Settings,
    rules: SiteRules | WidthRules,
    policy: str,
    alpha: float,
    spreads: Mapping[str, JobSpread] | None = None,
) -> dict[str, Allocation]:
    """Per allocated target, the allocation a value policy (cost or value) makes."""
    if policy == "cost":
        return cost_allocations(dists, levels, job, settings, rules, spreads)
    if policy == "value":
        return {t: value_allocation(dists[t], levels.get(t), alpha) for t in ALLOCATED_TARGETS}
    raise ValueError(f"policy {policy!r} allocates a class, not a value: use cost or value")


def settled_decide(
    dists: Mapping[str, ValueDistribution],
    levels: Mapping[str, ConformalLevels | None],
    job: JobContext,
    settings: Settings,
    work: Workload,
    policy: str,
    alpha: float,
    spreads: Mapping[str, JobSpread] | None = None,
) -> tuple[dict[str, Allocation], dict[bool, SiteRules]]:
    """:func:`decide` at the caps' loads its own choices make: from the load the needs
    alone carry (:func:`decision_rules`), ``allocation.load_rounds`` damped steps towards
    the load the last choice put on the long queue and HIMEM (:func:`chosen_loads`), each
    followed by a new choice (the cost policy only: the value policy prices nothing)."""
    floor = decision_rules(work, settings)
    rules = floor
    allocations = decide(dists, levels, job, settings, rules, policy, alpha, spreads)
    for _ in range(settings.allocation.load_rounds if policy == "cost" else 0):
        rules = with_loads(rules, chosen_loads(allocations, job, rules, work), floor)
        allocations = decide(dists, levels, job, settings, rules, policy, alpha, spreads)
    return allocations, rules


def measured_values(work: Workload, settings: Settings) -> dict[str, np.ndarray]:
    """Each task's ramCount and cpuTime from all its units (the target code; NaN: none)."""
    ram, cpu = TaskEstimator(work, settings)(np.arange(work.n_jobs))
    tasks = range(work.n_tasks)
    return {
        "memory": np.array([ram.get(t, np.nan) for t in tasks], dtype=float),
        "cputime": np.array([cpu.get(t, np.nan) for t in tasks], dtype=float),
    }


def oracle_submission(work: Workload, settings: Settings) -> Submission:
    """Perfect foresight: each task's own target values, at submission."""
    return Submission.of(measured_values(work, settings))


def feature_rows(
    predictor: Predictor, features: pd.DataFrame, task_ids: np.ndarray
) -> pd.DataFrame:
    """The bundle's feature columns of the tasks, in ``task_ids`` order."""
    missing = np.setdiff1d(task_ids, features.index.to_numpy())
    if missing.size:
        raise ValueError(f"no submission features for {missing.size} tasks, e.g. {missing[0]}")
    return features.loc[task_ids, [f.name for f in predictor.feature_specs]]


def class_values(
    predictor: Predictor,
    rows: pd.DataFrame,
    targets: Sequence[str],
    *,
    policy: str = "risk",
    alpha: float = 0.05,
    recall: float = 0.9,
) -> dict[str, np.ndarray]:
    """Recommended value per row of the class a class policy chooses, per target."""
    out: dict[str, np.ndarray] = {}
    for target in targets:
        if target not in predictor.targets:
            raise ValueError(f"bundle {predictor.version} does not predict {target!r}")
        calibration = () if policy == "argmax" else predictor.calibration(target)
        chosen = make_policy(policy, *calibration, alpha=alpha, recall=recall).choose(
            predictor.predict_proba(rows, targets=[target])[target]
        )
        out[target] = np.asarray(predictor.bins[target].recommended, dtype=float)[chosen]
    return out


def _job_of(dists: Mapping[str, ValueDistribution], work: Workload) -> JobContext:
    """The job context with the walltime median of ``dists`` (where it has no walltime:
    getJobMaxWalltime of its cpuTime median)."""
    if "walltime" in dists:
        return workload_context(work, dists["walltime"].median())
    provisional = workload_context(work, np.full(work.n_tasks, np.nan))
    return workload_context(work, walltime_limit_s(dists["cputime"].median(), provisional, ()))


def value_distributions(
    predictor: Predictor, rows: pd.DataFrame
) -> tuple[dict[str, ValueDistribution], dict[str, ConformalLevels | None]]:
    """The bundle's value distribution and conformal levels of the targets it predicts."""
    dists: dict[str, ValueDistribution] = {}
    levels: dict[str, ConformalLevels | None] = {}
    for target in (*ALLOCATED_TARGETS, "walltime"):
        # the job walltime falls back to cpuTime's where the bundle has no walltime values
        optional = target not in ALLOCATED_TARGETS and not predictor.has_values(target)
        if target in predictor.targets and not optional:
            dists[target] = predictor.value_distribution(rows, target)
            levels[target] = predictor.value_levels(target)
    missing = [t for t in ALLOCATED_TARGETS if t not in dists]
    if missing:
        raise ValueError(f"bundle {predictor.version} does not predict {missing[0]!r}")
    return dists, levels


def model_submission(
    predictor: Predictor,
    features: pd.DataFrame,
    work: Workload,
    settings: Settings,
    *,
    policy: str,
    alpha: float,
    choose_scouts: bool = False,
    spreads: Mapping[str, JobSpread] | None = None,
) -> Submission:
    """What the bundle allocates (and, with ``choose_scouts``, which tasks to scout)."""
    rows = feature_rows(predictor, features, work.task_ids)
    if policy not in VALUE_POLICIES and not choose_scouts:
        return Submission.of(class_values(predictor, rows, ALLOCATED_TARGETS, policy=policy,
                                          alpha=alpha))  # fmt: skip
    dists, levels = value_distributions(predictor, rows)
    job, rules = _job_of(dists, work), decision_rules(work, settings)
    spreads = job_spreads(work, settings) if spreads is None else spreads
    allocations: dict[str, Allocation] = {}
    if policy in VALUE_POLICIES:
        allocations, rules = settled_decide(
            dists, levels, job, settings, work, policy, alpha, spreads
        )
        values = {t: a.value for t, a in allocations.items()}
    else:
        values = class_values(predictor, rows, ALLOCATED_TARGETS, policy=policy, alpha=alpha)
    choice = None
    if choose_scouts:
        priced = (
            allocations
            if policy == "cost"
            else cost_allocations(dists, levels, job, settings, rules, spreads)
        )
        unseen = settings.allocation.scout_unseen
        unknown = unseen_application(predictor.unknown_categories(rows), unseen)
        choice = scout_choice(priced, job, settings, unknown)
    return Submission(values["memory"], values["cputime"], allocations, choice)


def truth_submission(
    truth: Mapping[str, ValueDistribution],
    work: Workload,
    settings: Settings,
    *,
    policy: str,
    alpha: float,
    spreads: Mapping[str, JobSpread] | None = None,
) -> Submission:
    """The bayes strategy: the model's decision rule on the generator's true distributions
    (rows in the workload's task order) and the spread of its jobs around them (the
    generator's truth holds no within-task law, so the one its jobs show: the same
    :func:`job_spreads` the model's decision gets)."""
    missing = [t for t in ALLOCATED_TARGETS if t not in truth]
    if missing:
        raise ValueError(f"the synthetic truth has no distribution of {missing[0]!r}")
    spreads = job_spreads(work, settings) if spreads is None else spreads
    job = _job_of(truth, work)
    allocations, _ = settled_decide(truth, {}, job, settings, work, policy, alpha, spreads)
    return Submission(allocations["memory"].value, allocations["cputime"].value, allocations)


def choice_summary(choice: ScoutChoice) -> dict[str, float | int]:
    """replay.json's account of the selective strategy's choice."""
    predict, scout = choice.predict_cost, choice.scout_cost
    return {
        "tasks": len(choice.scout),
        "scouted_tasks": int(choice.scout.sum()),
        "scouted_unknown_categories": int(choice.unknown.sum()),
        "predict_cost_core_hours_p50": float(np.median(predict)) if predict.size else 0.0,
        "scout_cost_core_hours_p50": float(np.median(scout)) if scout.size else 0.0,
    }
