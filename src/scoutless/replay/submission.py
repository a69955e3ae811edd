"""What each strategy allocates at submission, per task: the replay's side of allocation/.

- **model** (predicted, hybrid, selective): the bundle's value distribution per target and
  its conformal levels, turned into a number by the replay's policy: ``cost`` (the least
  expected cost under the site's rules and prices, the default), ``value`` (the calibrated
  1 - alpha value), or a class policy (the recommended value of the class it chooses);
- **bayes**: the same rule fed the generator's true distribution of each task's value,
  with ``levels=None`` (exact: nothing to calibrate);
- **oracle**: each task's target value as PanDA defines it, from all its jobs (the target
  code, margins included): what the scouts would converge to on the whole task.

The model's allocations are the service's: one :class:`SiteDecision`, fed the bundle's
distributions, the job context of each task's submission features (PanDA's defaults where
unset, the walltime median) and the jobs' spread and room loads the bundle carries (learnt
from its training history, not from the replayed one). The truth's decision knows what the
history shows: each task's jobs (their median cores, events, corePower), the spread of
its jobs and the load on the caps, settled against its own choices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scoutless.allocation.allocate import (
    Allocation,
    ScoutChoice,
    coverage_grid,
    unseen_application,
    z_grid,
)
from scoutless.allocation.context import JobContext, history_job_context
from scoutless.allocation.costs import walltime_limit_s
from scoutless.allocation.decider import SiteDecision, standard_types
from scoutless.allocation.policies import make_policy
from scoutless.allocation.quantiles import weighted_quantiles
from scoutless.allocation.spread_table import KIND_FEATURE, SpreadTable
from scoutless.allocation.values import ConformalLevels, ValueDistribution
from scoutless.config import ReplaySettings, Settings
from scoutless.features.encoded import EncodedFeatures
from scoutless.policy_names import VALUE_POLICIES
from scoutless.replay.site_rules import chosen_loads, decision_rules, with_loads
from scoutless.replay.workload import TaskEstimator, Workload

if TYPE_CHECKING:
    from scoutless.bundle import Predictor

#: the targets a replay allocates from: ramCount (memory) and cpuTime (→ job walltime)
ALLOCATED_TARGETS: tuple[str, ...] = ("memory", "cputime")
#: equally likely jobs a task's prior holds (its weight in outcomes: JEDI's scouts)
PRIOR_POINTS = 10
#: levels of a task's value distribution the prior is read from (× the jobs' spread)
VALUE_POINTS = 16
#: the targets the online prior covers: ramCount (MB/core) and cpuTime (HS06·s/event)
PRIOR_TARGETS = ALLOCATED_TARGETS


def job_need_priors(
    dists: Mapping[str, ValueDistribution],
    levels: Mapping[str, ConformalLevels | None],
    spreads: SpreadTable | None,
    kinds: Sequence[Any] | np.ndarray | None,
) -> dict[str, np.ndarray]:
    """Per target of `PRIOR_TARGETS` that ``dists`` holds, (n_tasks, `PRIOR_POINTS`)
    equally likely needs of one job: the calibrated value distribution at `VALUE_POINTS`
    coverages times the jobs' spread of the task's kind (none: the value itself), read at
    the mixture's quantiles."""
    out = {}
    for target in PRIOR_TARGETS:
        if target not in dists:
            continue
        dist = dists[target]
        values = dist.grid_at_z(z_grid(coverage_grid(VALUE_POINTS), levels.get(target)))
        spread = None if spreads is None or kinds is None else spreads.spread(target, kinds)
        factors = np.ones((len(dist), 1)) if spread is None else spread.factors
        weights = np.ones(1) if spread is None else spread.weights
        needs = (values[:, :, None] * factors[:, None, :]).reshape(len(dist), -1)
        mixture = np.tile(weights / VALUE_POINTS, VALUE_POINTS)
        priors = weighted_quantiles(needs, mixture, coverage_grid(PRIOR_POINTS))
        out[target] = np.maximum(priors, 1e-6)  # a log1p model's value may sit at 0
    return out


@dataclass(frozen=True)
class Submission:
    """What one source of knowledge allocates at submission, per task."""

    ram: np.ndarray  # ramCount, MB/core (NaN: the replay's default)
    cputime: np.ndarray  # cpuTime, HS06·s/event (NaN: the queue's maxtime)
    #: per target, the value allocations behind ``ram``/``cputime`` (empty: class or oracle)
    allocations: Mapping[str, Allocation] = field(default_factory=dict)
    #: the selective strategy's choice (model only): which tasks are cheaper to scout
    choice: ScoutChoice | None = None
    #: per target (memory, cputime), (n_tasks, k) equally likely needs of one job: the
    #: online strategy's prior (model with a value policy only; ``job_need_priors``)
    job_priors: Mapping[str, np.ndarray] = field(default_factory=dict)

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
    names = standard_types(cfg.resource_types)
    groups = []
    for multicore in (False, True):
        rows = np.flatnonzero((np.asarray(cores) > 1) == multicore)
        if rows.size and multicore in names:
            groups.append((names[multicore], rows))
    return groups


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


def spread_table(work: Workload, settings: Settings) -> SpreadTable:
    """Per allocated target, the spread of a task's jobs around its value, learnt from the
    workload's jobs per task kind (:meth:`SpreadTable.learn`): what a bundle carries for
    the service (``scoutless.bundle.write_job_spreads``)."""
    ratios = job_ratios(work, settings)
    return SpreadTable.learn(ratios, work.kind[work.task], settings.allocation.job_spread_points)


def history_decision(work: Workload, settings: Settings) -> SiteDecision:
    """The decision with what the workload's own jobs show: their spread per task kind and
    the load the jobs that need HIMEM or the long queue put on each width's caps
    (:func:`decision_rules`): the truth's side (``bayes``), not the model's."""
    decision = SiteDecision.of(settings, spread_table(work, settings))
    return decision.with_rules(decision_rules(work, settings))


def settled_decide(
    decision: SiteDecision,
    dists: Mapping[str, ValueDistribution],
    job: JobContext,
    work: Workload,
    policy: str,
    alpha: float,
) -> dict[str, Allocation]:
    """``decision`` at the caps' loads its own choices make: from its rules,
    ``allocation.load_rounds`` damped steps towards the load the last choice put on the
    long queue and HIMEM (:func:`chosen_loads`), each followed by a new choice (the cost
    policy only: the value policy prices nothing); exact distributions (no levels)."""
    if policy not in VALUE_POLICIES:
        raise ValueError(f"policy {policy!r} allocates a class, not a value: use cost or value")
    floor = decision.rules
    decide = lambda d: d.allocate(  # noqa: E731
        dists, {}, job, policy=policy, alpha=alpha, kinds=work.kind, targets=ALLOCATED_TARGETS
    )
    allocations = decide(decision)
    for _ in range(decision.allocation.load_rounds if policy == "cost" else 0):
        loads = chosen_loads(allocations, job, decision.rules, work)
        decision = decision.with_rules(with_loads(decision.rules, loads, floor))
        allocations = decide(decision)
    return allocations


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
    predictor: Predictor, encoded: EncodedFeatures
) -> tuple[dict[str, ValueDistribution], dict[str, ConformalLevels | None]]:
    """The bundle's value distribution and conformal levels of the allocated targets and
    walltime (the job's walltime; a bundle without walltime values: a typical job's)."""
    missing = [t for t in ALLOCATED_TARGETS if t not in predictor.targets]
    if missing:
        raise ValueError(f"bundle {predictor.version} does not predict {missing[0]!r}")
    walltime = ["walltime"] if "walltime" in predictor.targets and predictor.has_values(
        "walltime") else []  # fmt: skip
    dists = predictor.value_distributions(encoded, [*ALLOCATED_TARGETS, *walltime])
    return dists, {t: predictor.value_levels(t) for t in dists}


def model_submission(
    predictor: Predictor,
    features: pd.DataFrame,
    work: Workload,
    settings: Settings,
    *,
    policy: str,
    alpha: float,
    choose_scouts: bool = False,
) -> Submission:
    """What the bundle allocates (and, with ``choose_scouts``, which tasks to scout): the
    service's decision (:class:`SiteDecision` with the bundle's jobs' spread and room
    loads) from what the service knows at submission, the tasks' features."""
    rows = feature_rows(predictor, features, work.task_ids)
    if policy not in VALUE_POLICIES and not choose_scouts:
        return Submission.of(class_values(predictor, rows, ALLOCATED_TARGETS, policy=policy,
                                          alpha=alpha))  # fmt: skip
    decision = SiteDecision.of(settings, predictor.job_spreads, predictor.room_loads)
    inspected = predictor.inspect(rows)
    dists, levels = value_distributions(predictor, inspected.encoded)
    job = decision.job(inspected.numbers, len(rows), dists)
    kinds = inspected.categories.get(KIND_FEATURE)
    decide = lambda p: decision.allocate(  # noqa: E731
        dists, levels, job, policy=p, alpha=alpha, kinds=kinds, targets=ALLOCATED_TARGETS
    )
    allocations: dict[str, Allocation] = {}
    if policy in VALUE_POLICIES:
        allocations = decide(policy)
        values = {t: a.value for t, a in allocations.items()}
    else:
        values = class_values(predictor, rows, ALLOCATED_TARGETS, policy=policy, alpha=alpha)
    choice = None
    if choose_scouts:
        priced = allocations if policy == "cost" else decide("cost")
        unknown = unseen_application(inspected.unknown, settings.allocation.scout_unseen)
        choice = decision.scouting(priced, job, unknown)
    priors = job_need_priors(dists, levels, predictor.job_spreads, kinds)
    return Submission(values["memory"], values["cputime"], allocations, choice, priors)


def truth_submission(
    truth: Mapping[str, ValueDistribution],
    work: Workload,
    settings: Settings,
    *,
    policy: str,
    alpha: float,
) -> Submission:
    """The bayes strategy: the model's decision rule on the generator's true distributions
    (rows in the workload's task order), the jobs as the history holds them, and the
    spread and the caps' loads its jobs show (:func:`history_decision`: the generator's
    truth holds no within-task law)."""
    missing = [t for t in ALLOCATED_TARGETS if t not in truth]
    if missing:
        raise ValueError(f"the synthetic truth has no distribution of {missing[0]!r}")
    job = _job_of(truth, work)
    allocations = settled_decide(history_decision(work, settings), truth, job, work, policy,
                                 alpha)  # fmt: skip
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
