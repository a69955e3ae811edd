"""The site a replay's decision assumes: the engine's rules (queue maxtimes, the memory
grace the site guarantees) and, per width (multicore or not), the load the jobs that need
HIMEM or the long queue put on that width's caps."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from scoutless.allocation.allocate import Allocation
from scoutless.allocation.context import JobContext
from scoutless.allocation.costs import walltime_limit_s
from scoutless.allocation.room_loads import ROOM_FIELDS, RoomLoads
from scoutless.allocation.site import SiteRules
from scoutless.config import ReplaySettings, Settings
from scoutless.replay.pool import LONG, pool_cores, standard_types
from scoutless.replay.workload import Workload


def site_rules(work: Workload, cfg: ReplaySettings) -> SiteRules:
    """The rules the engine applies: the long queue's maxtime raised to the workload's
    longest job (it ran, so its queue allowed it), as in ``replay/state.py``."""
    rules = SiteRules.of(cfg)
    longest = float(np.ceil(work.wall_s.max())) if work.n_jobs else 0.0
    return dataclasses.replace(rules, max_maxtime_s=max(cfg.queue_maxtime_s or 0.0, longest))


#: the rules a decision assumes per width (multicore or not): the loads differ
WidthRules = Mapping[bool, SiteRules]


def decision_rules(work: Workload, settings: Settings) -> dict[bool, SiteRules]:
    """Per width (multicore or not), the rules a decision assumes on this workload: the
    site's, with the memory grace the site guarantees
    (``allocation.guaranteed_memory_grace``), the width's pool and caps in cores and the
    load that the jobs which need that width's HIMEM or long queue put on its caps
    (:func:`site_load`)."""
    rules = site_rules(work, settings.replay).deciding(settings.allocation)
    return {
        multicore: dataclasses.replace(rules, **fields)
        for multicore, fields in site_load(work, settings.replay, rules).items()
    }


def learnt_room_loads(work: Workload, settings: Settings) -> RoomLoads:
    """Per width, the load the workload's jobs put on its HIMEM and long-queue caps where
    each goes where its own need sends it (:func:`decision_rules`): what a bundle carries
    from its training history (``bundle.write_room_loads``) so that every caller's decision
    prices the rooms at the site's load. A floor: a strategy's kills and margins add to it."""
    return RoomLoads({
        width: {room: getattr(rules, field) for room, field in ROOM_FIELDS.items()}
        for width, rules in decision_rules(work, settings).items()
    })  # fmt: skip


def site_load(
    work: Workload, cfg: ReplaySettings, rules: SiteRules
) -> dict[bool, dict[str, float]]:
    """Per width, :class:`SiteRules`' room fields: the cores of its pool, long queue and
    HIMEM (``pool_cores``: the caps), and the load and residual drain of each
    (:func:`_room_terms`) if every job went where its own need sends it (a run above the
    short maxtime, a need above the standard slot): what the site carries whatever a
    strategy asks, over the history's span."""
    cores = pool_cores(work, cfg)
    span = span_s(work)
    busy = work.cores * work.wall_s
    short = rules.short_maxtime_s
    long = work.wall_s > short if short is not None else np.zeros(work.n_jobs, bool)
    per_core = np.maximum(work.need_mb - work.base_ram_mb[work.task], 0.0) / work.cores
    himem = per_core * rules.memory_compensation > rules.standard_mb_per_core
    per_task = lambda rows: np.bincount(  # noqa: E731
        work.task[rows], weights=busy[rows], minlength=work.n_tasks
    )
    out = {}
    for multicore, name in standard_types(cfg.resource_types).items():
        width = (work.cores > 1) == multicore
        himem_cap = sum(cores[k] for k, t in cfg.resource_types.items()
                        if t.multicore == multicore and k != name)  # fmt: skip
        long_cap = cores.get(name + LONG, 0)
        caps = {"pool": cores[name], "long": long_cap, "himem": himem_cap}
        out[multicore] = {f"{room}_cores": float(cap) if cap > 0 else math.inf
                          for room, cap in caps.items()}  # fmt: skip
        for room, rows in (("pool", width), ("long", width & long), ("himem", width & himem)):
            out[multicore].update(_room_terms(room, per_task(rows), caps[room], span))
    return out


def _room_terms(room: str, task_core_s: np.ndarray, cap: float, span: float) -> dict[str, float]:
    """A room's ``<room>_load`` (its tasks' work over its cores × the span) and
    ``<room>_residual_h``: E[S²] ÷ 2 E[S] of the drains S (a task's work there over its
    cores, hours) of the tasks that use it, the mean residual of an M/G/1 server."""
    if not 0 < cap < math.inf or span <= 0:
        return {f"{room}_load": 0.0, f"{room}_residual_h": 0.0}
    drains = task_core_s[task_core_s > 0] / cap / 3600.0
    residual = float((drains**2).sum() / (2.0 * drains.sum())) if drains.size else 0.0
    return {f"{room}_load": float(task_core_s.sum() / (cap * span)), f"{room}_residual_h": residual}


def span_s(work: Workload) -> float:
    """The history's span the loads are shares of (as ``pool_cores`` sizes the pool)."""
    return float(work.submit_s.max() - work.submit_s.min()) + float(np.median(work.wall_s))


def chosen_loads(
    allocations: Mapping[str, Allocation], job: JobContext, rules: WidthRules, work: Workload
) -> dict[bool, dict[str, float]]:
    """Per width, the long queue's and HIMEM's load and residual drain (``_room_terms``)
    the allocations themselves make: a task's expected jobs × cores × walltime, all of it where its value sends
    every job there (a cpuTime whose limit is above the short maxtime, a ramCount above
    the standard slot), else its predicted share of killed jobs (their retries go there:
    the longest maxtime, the raised ramCount)."""
    memory, cputime = allocations["memory"], allocations["cputime"]
    busy = np.maximum(job.n_jobs, 1.0) * job.cores * job.wall_s
    span = span_s(work)
    out = {}
    for multicore, width_rules in rules.items():
        width = (job.cores > 1) == multicore
        border = width_rules.standard_mb_per_core / width_rules.memory_compensation
        himem = np.where(memory.value > border, 1.0, _killed_share(memory))
        long = _killed_share(cputime)
        if width_rules.short_maxtime_s is not None:
            limit = walltime_limit_s(cputime.value, job, ())
            long = np.where(limit > width_rules.short_maxtime_s, 1.0, long)
        out[multicore] = {
            **_room_terms("long", np.where(width, busy * long, 0.0), width_rules.long_cores, span),
            **_room_terms("himem", np.where(width, busy * himem, 0.0), width_rules.himem_cores,
                          span),
        }  # fmt: skip
    return out


def with_loads(
    rules: WidthRules, loads: Mapping[bool, Mapping[str, float]], floor: WidthRules
) -> dict[bool, SiteRules]:
    """Each width's rules at the mean of its room terms (loads, residual drains) and
    ``loads``' (a damped step towards those the choices make), never below ``floor``'s
    (what the needs alone carry)."""
    return {
        w: dataclasses.replace(r, **{
            k: max(getattr(floor[w], k), (getattr(r, k) + v) / 2.0) for k, v in loads[w].items()
        })
        for w, r in rules.items()
    }  # fmt: skip


def _killed_share(allocation: Allocation) -> np.ndarray:
    if allocation.kill_probability is None:
        return np.zeros(len(allocation.value))
    return np.nan_to_num(allocation.kill_probability)


def rules_of(rules: SiteRules | WidthRules, multicore: bool) -> SiteRules:
    """One width's rules (the same rules for both where one is given)."""
    return rules if isinstance(rules, SiteRules) else rules[multicore]
