"""The strategies as plans (the pool they run on: :mod:`scoutless.replay.pool`).

- **scouts**: the task starts with what was requested at submission (ramCount, cpuTime;
  PanDA's defaults where none), runs its scouts, and takes the scouts' values at the
  avalanche; re-tuned when ``retune_done_jobs`` of its jobs finished (5 and 100).
- **predicted**: the model's allocation (``replay.policy``, cost-aware by default) for
  every job, released at once; never changed (only PanDA's retry rules act).
- **hybrid**: predicted at submission, then re-tuned from the task's first finished jobs,
  as JEDI re-tunes after its scouts, so a wrong prediction heals without a scout wait.
  The re-tuning may raise cpuTime but not lower it: the first jobs to finish are the
  short ones, so their cpuTime is biased low (lowering it on them multiplies walltime kills).
- **selective**: scouts the tasks that ``allocation.selective`` finds cheaper to scout
  (a distribution too wide, or categories the model never saw), exactly as the scouts
  strategy does; every other task as the hybrid (the re-tuning is what makes the hybrid
  at least as good as the scouts, so a task not scouted keeps that safety net).
- **bayes**: the predicted strategy's decision rule fed the generator's true distribution
  of each task's value (synthetic histories only): the best any submission-time predictor
  can do with that rule.
- **oracle**: each *job* exactly its own measured need, no scouts: perfect foresight. Its
  ramCount is the job's own maxPSS per core (so it lands in the slot that need requires),
  its walltime limit the job's own run time: no kill, the least slack, HIMEM and the long
  queue only for the jobs that need them. It bounds every strategy's kill and slack
  components by construction (``replay/priced.py``).
- **online** (on request): the hybrid, every job sized by the online sizer from the
  hybrid's prediction on (``replay/panda_online.py``): each job's first attempt when it
  starts, from its task's outcomes so far (memory and walltime), each memory retry from
  the need's distribution above what killed it; JEDI's re-tuning and memory retry act
  beside it (``replay.online_jedi_retry``), and it never lowers what JEDI raised.
- **canary** (on request): a rollout rehearsed in one pool, as production runs it. Each
  task gets the arm the listener would give it (``allocation.arms.assign``: seed, share,
  its jediTaskID); ``canary`` tasks run as ``replay.canary_arm`` (selective's hybrid
  branch; the hybrid; the online strategy, its sizer sizing the canary's tasks only; or
  ``control``, an A/A rehearsal whose arms differ only by the draw's noise), ``control``
  and ``ineligible`` ones (the allocation would scout them) as the scouts strategy.
  ``replay.canary_harm`` scales the canary's allocation (and the online arm's prior) for
  some task families: a drill for the guard rail.

Allocations for all tasks are made in one batch up front (``replay/submission.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from scoutless.allocation.arms import RolloutState, assign, task_key
from scoutless.config import Settings
from scoutless.replay.config import ReplaySettings
from scoutless.replay.panda_online import PandaOnline
from scoutless.replay.plan import CanaryDraw, StrategyPlan
from scoutless.replay.rules import need_ram_per_core
from scoutless.replay.submission import Submission
from scoutless.replay.workload import Workload

#: strategy -> the submission it allocates from ("model": the bundle's, "bayes": the
#: generator's truth, "oracle": the measured values); scouts need none
SOURCE_OF: dict[str, str] = {
    "predicted": "model", "hybrid": "model", "selective": "model",
    "bayes": "bayes", "oracle": "oracle", "canary": "model", "online": "model",
}  # fmt: skip


def requested(work: Workload, cfg: ReplaySettings) -> tuple[np.ndarray, np.ndarray]:
    """ramCount (the replay's default where none) and cpuTime as submitted."""
    ram = np.where(np.isnan(work.request_ram), cfg.default_ram_mb_per_core, work.request_ram)
    return ram, work.request_cputime.copy()


def _plan(
    name: str, work: Workload, cfg: ReplaySettings, sub: Submission, settings: Settings | None
) -> StrategyPlan:
    ram = np.where(np.isfinite(sub.ram), sub.ram, cfg.default_ram_mb_per_core)
    cpu = np.asarray(sub.cputime, dtype=float).copy()
    if name == "online":
        if settings is None:
            raise ValueError("strategy 'online' needs the settings its sizer prices with")
        sizer = PandaOnline(work, settings.model_copy(update={"replay": cfg}), sub.job_priors)
        return StrategyPlan(name, ram, cpu, False, retune=True, retune_lowers_cputime=False,
                            sizer=sizer, sizes_at_start=True,
                            ladder_beside_sizer=cfg.online_jedi_retry)  # fmt: skip
    if name == "selective":
        if sub.choice is None:
            raise ValueError("strategy 'selective' needs the model's scout choice")
        scout = sub.choice.scout
        request_ram, request_cpu = requested(work, cfg)
        return StrategyPlan(
            name, np.where(scout, request_ram, ram), np.where(scout, request_cpu, cpu),
            use_scouts=scout.copy(), retune=True, retune_lowers_cputime=scout.copy(),
        )  # fmt: skip
    if name == "oracle":
        return StrategyPlan(name, ram, cpu, False, retune=False, unit_ram=oracle_unit_ram(work),
                            unit_walltime=work.wall_s.copy())  # fmt: skip
    hybrid = name == "hybrid"
    return StrategyPlan(name, ram, cpu, False, retune=hybrid, retune_lowers_cputime=not hybrid)


def oracle_unit_ram(work: Workload) -> np.ndarray:
    """Per unit, the ramCount (MB/core) whose allocation is exactly its maxPSS."""
    return need_ram_per_core(work.need_mb, work.base_ram_mb[work.task], work.cores)


def canary_draw(work: Workload, cfg: ReplaySettings, sub: Submission, seed: int) -> CanaryDraw:
    """Each task's arm as the listener assigns it (eligible: the allocation would not scout
    it, under ``canary_arm`` selective), and the model's ramCount and cpuTime with
    ``canary_harm`` applied to the canary's harmed families."""
    if cfg.canary_arm == "selective":
        if sub.choice is None:
            raise ValueError(
                "strategy 'canary' (canary_arm selective) needs the model's scout choice"
            )
        eligible = ~sub.choice.scout
    else:
        eligible = np.ones(work.n_tasks, dtype=bool)
    state = RolloutState("canary", cfg.canary_share, seed, reason="replay")
    decided = [
        assign(state, task_key(int(tid), None), bool(ok))
        for tid, ok in zip(work.task_ids.tolist(), eligible.tolist(), strict=True)
    ]
    arms = np.array([a.arm for a in decided], dtype=object)
    ram = np.where(np.isfinite(sub.ram), sub.ram, cfg.default_ram_mb_per_core)
    cpu = np.asarray(sub.cputime, dtype=float).copy()
    memory_factor, cpu_factor = harm_factors(work, cfg, arms)
    reasons = np.array([a.reason for a in decided], dtype=object)
    # the model sizes the canary's tasks, unless the canary runs as the control (A/A)
    scouted = np.ones(work.n_tasks, dtype=bool) if cfg.canary_arm == "control" else (
        arms != "canary")  # fmt: skip
    return CanaryDraw(seed, arms, reasons, ram * memory_factor, cpu * cpu_factor, scouted)


def harm_factors(
    work: Workload, cfg: ReplaySettings, arms: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per task, what ``canary_harm`` scales the canary's ramCount and cpuTime by (1:
    unharmed, every task outside the canary arm)."""
    ones = np.ones(work.n_tasks)
    harm = cfg.canary_harm
    if harm is None:
        return ones, ones
    hit = arms == "canary"
    if harm.processingtypes:
        hit &= np.isin(work.kind.astype(str), harm.processingtypes)
    return np.where(hit, harm.memory_factor, 1.0), np.where(hit, harm.cputime_factor, 1.0)


def _canary_plan(
    work: Workload, cfg: ReplaySettings, draw: CanaryDraw, sub: Submission,
    settings: Settings | None,
) -> StrategyPlan:  # fmt: skip
    """The canary's tasks as ``canary_arm`` runs them (the online arm: the online
    strategy's sizer, on them only), the others as the scouts strategy."""
    request_ram, request_cpu = requested(work, cfg)
    sized = ~draw.scouted
    plan = StrategyPlan(
        "canary", np.where(sized, draw.ram, request_ram),
        np.where(sized, draw.cputime, request_cpu), use_scouts=draw.scouted.copy(),
        retune=True, retune_lowers_cputime=draw.scouted.copy(), canary=draw,
    )  # fmt: skip
    if cfg.canary_arm != "online":
        return plan
    if settings is None:
        raise ValueError("canary_arm 'online' needs the settings its sizer prices with")
    memory_factor, cpu_factor = harm_factors(work, cfg, draw.arms)
    factors = {"memory": memory_factor, "cputime": cpu_factor}
    priors = {t: np.asarray(p) * factors[t][:, None] for t, p in sub.job_priors.items()}
    sizer = PandaOnline(work, settings.model_copy(update={"replay": cfg}), priors, tasks=sized,
                        name="canary_arm 'online'")  # fmt: skip
    return replace(plan, sizer=sizer, sizes_at_start=True,
                   ladder_beside_sizer=cfg.online_jedi_retry)  # fmt: skip


def make_plans(
    work: Workload,
    cfg: ReplaySettings,
    submissions: Mapping[str, Submission],
    names: list[str] | None = None,
    canary_seed: int = 0,
    settings: Settings | None = None,
) -> list[StrategyPlan]:
    """Plans of ``names`` (default: the configured strategies), from the submissions by
    source (:data:`SOURCE_OF`); the canary's arms drawn with ``replay.canary_seed`` or else
    ``canary_seed`` (the rollout's); ``settings``: what ``online``'s sizer prices with."""
    plans = []
    for name in names or cfg.strategies:
        if name == "scouts":
            plans.append(StrategyPlan(name, *requested(work, cfg), True, True))
            continue
        source = SOURCE_OF[name]
        if source not in submissions:
            need = {"model": "a bundle's predictions", "bayes": "a synthetic history's truth"}
            raise ValueError(f"strategy {name!r} needs {need.get(source, source)}")
        if name == "canary":
            seed = canary_seed if cfg.canary_seed is None else cfg.canary_seed
            draw = canary_draw(work, cfg, submissions[source], seed)
            plans.append(_canary_plan(work, cfg, draw, submissions[source], settings))
            continue
        plans.append(_plan(name, work, cfg, submissions[source], settings))
    return plans
