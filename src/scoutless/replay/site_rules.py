"""The site a replay's decision assumes: the engine's rules (queue maxtimes, the memory
grace the site guarantees) and, per width (multicore or not), the load the jobs that need
HIMEM or the long queue put on that width's caps."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from scoutless.allocation.costs import SiteRules
from scoutless.config import ReplaySettings, Settings
from scoutless.replay.pool import LONG, pool_cores, standard_types
from scoutless.replay.workload import Workload


def site_rules(work: Workload, cfg: ReplaySettings) -> SiteRules:
    """The rules the engine applies: the long queue's maxtime raised to the workload's
    longest job (it ran, so its queue allowed it), as in ``replay/engine.py``."""
    rules = SiteRules.of(cfg)
    longest = float(np.ceil(work.wall_s.max())) if work.n_jobs else 0.0
    return dataclasses.replace(rules, max_maxtime_s=max(cfg.queue_maxtime_s or 0.0, longest))


#: the rules a decision assumes per width (multicore or not): the loads differ
WidthRules = Mapping[bool, SiteRules]


def decision_rules(work: Workload, settings: Settings) -> dict[bool, SiteRules]:
    """Per width (multicore or not), the rules a decision assumes on this workload: the
    site's, with the memory grace the site guarantees
    (``allocation.guaranteed_memory_grace``) and the load that the jobs which need that
    width's HIMEM or long queue put on its caps (:func:`site_load`)."""
    rules = site_rules(work, settings.replay).deciding(settings.allocation)
    return {
        multicore: dataclasses.replace(rules, long_load=long_load, himem_load=himem_load)
        for multicore, (long_load, himem_load) in site_load(work, settings.replay, rules).items()
    }


def site_load(
    work: Workload, cfg: ReplaySettings, rules: SiteRules
) -> dict[bool, tuple[float, float]]:
    """Per width, the (long queue, HIMEM) mean busy share of its caps if every job went
    where its own need sends it (a run above the short maxtime, a need above the standard
    slot): the load the site carries whatever a strategy asks, in the pool's own terms
    (``pool_cores``: the caps, the history's span)."""
    cores = pool_cores(work, cfg)
    span = float(work.submit_s.max() - work.submit_s.min()) + float(np.median(work.wall_s))
    busy = work.cores * work.wall_s
    short = rules.short_maxtime_s
    long = work.wall_s > short if short is not None else np.zeros(work.n_jobs, bool)
    per_core = np.maximum(work.need_mb - work.base_ram_mb[work.task], 0.0) / work.cores
    himem = per_core * rules.memory_compensation > rules.standard_mb_per_core
    standard = standard_types(cfg.resource_types)
    out = {}
    for multicore, name in standard.items():
        width = (work.cores > 1) == multicore
        himem_cap = sum(cores[k] for k, t in cfg.resource_types.items()
                        if t.multicore == multicore and k != name)  # fmt: skip
        out[multicore] = (_share(busy[width & long].sum(), cores.get(name + LONG, 0), span),
                          _share(busy[width & himem].sum(), himem_cap, span))  # fmt: skip
    return out


def rules_of(rules: SiteRules | WidthRules, multicore: bool) -> SiteRules:
    """One width's rules (the same rules for both where one is given)."""
    return rules if isinstance(rules, SiteRules) else rules[multicore]


def _share(busy: float, cap: float, span: float) -> float:
    return float(busy / (cap * span)) if cap > 0 and span > 0 else 0.0
