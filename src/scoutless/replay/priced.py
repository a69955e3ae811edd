"""One priced total per strategy: what its jobs did, at ``Settings.allocation.prices``.

The same components the decision's expected cost sums, defined with it
(``allocation/costs.py``: :data:`~scoutless.allocation.costs.PRICE_OF`,
:func:`~scoutless.allocation.costs.realised_components`), taken from what the replay's
attempts did rather than expected, in core-hours:

- ``kills``: every killed attempt's core-hours, plus ``kill_overhead`` × its job's full
  core-hours (the retry waits and runs again);
- ``memory_slack``: GB-hours held above the larger of the need and the standard slot's
  share, by attempts that survived, × ``memory_gb_hour``;
- ``memory_overuse``: GB-hours used above the allocation (within the pilot's grace) ×
  ``memory_overuse_gb_hour``;
- ``himem`` / ``long_queue``: core-hours run in HIMEM slots / on the long queue × their
  premium × :func:`~scoutless.allocation.site.congestion` of the load that strategy put
  on that width's caps (their core-hours over the caps' cores × the replay's span);
- ``walltime_slack``: core-hours of walltime limit successful attempts did not use ×
  ``walltime_slack_core_hour``;
- ``scout_wait``: hours from a task's submission to its scouts' avalanche ×
  ``scout_delay_hour``;
- ``room_delay``: hours by which the longest queue wait of a task's attempts in a capped
  room (the long queue, a HIMEM slot) exceeds the longest of its attempts in the pool
  alone × ``scout_delay_hour`` (an hour a task is late is priced alike whatever it waits
  for): what the decision's :func:`~scoutless.allocation.site.room_delay_hours` expects.

Prices are the global ones with the overrides of each task's standard resource type, as
the decision takes them (``replay/submission.py``'s ``price_groups``). Other queueing
is not priced: ``oracle``, each job its own need, has no kill, no slack and no HIMEM or
long-queue core-hour or wait a job did not need, so it bounds every strategy's priced
total up to the congestion and waits its own load sets.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from scoutless.allocation.costs import PRICE_OF, realised_components
from scoutless.allocation.site import congestion
from scoutless.config import AllocationSettings, ReplaySettings
from scoutless.replay.pool import LONG, standard_types
from scoutless.replay.result import ReplayResult
from scoutless.replay.workload import Workload

#: realised loads' keys per width
WIDTHS = {False: "single", True: "multi"}
#: priced_components' keys, in the order the tables show them
COMPONENTS: tuple[str, ...] = tuple(PRICE_OF)


def task_prices(
    work: Workload, cfg: ReplaySettings, allocation: AllocationSettings
) -> dict[str, np.ndarray]:
    """Per task, each Prices field (the overrides of its width's standard resource type)."""
    multicore = task_widths(work)
    standard = standard_types(cfg.resource_types)
    out = {field: np.zeros(work.n_tasks) for field in PRICE_OF.values()}
    for is_multi in (False, True):
        prices = allocation.prices_for(standard.get(is_multi))
        rows = multicore == is_multi
        for field in out:
            out[field][rows] = getattr(prices, field)
    return out


def span_s(result: ReplayResult, work: Workload) -> float:
    """The replay's span: first submission to the last task's end (the history's span
    plus a median job where no task completed)."""
    ends = work.submit_s + result.completion_s
    if np.isfinite(ends).any():
        last = float(np.nanmax(ends))
    else:
        last = float(work.submit_s.max() + np.median(work.wall_s))
    return max(last - float(work.submit_s.min()), 1.0)


def realised_loads(
    result: ReplayResult, work: Workload, cfg: ReplaySettings, cores: Mapping[str, int]
) -> dict[str, dict[str, float]]:
    """Per width (``single``/``multi``), the mean busy share of its long queue's and
    HIMEM's caps over the replay's span."""
    span = span_s(result, work)
    multicore = task_widths(work)
    out = {}
    for is_multi, name in standard_types(cfg.resource_types).items():
        rows = multicore == is_multi
        himem_cap = sum(cores[k] for k, t in cfg.resource_types.items()
                        if t.multicore == is_multi and k != name)  # fmt: skip
        long_cap = cores.get(name + LONG, 0)
        share = lambda busy, cap: float(busy / (cap * span)) if cap > 0 else 0.0  # noqa: E731
        out[WIDTHS[is_multi]] = {
            "long_queue": share(result.long_core_s[rows].sum(), long_cap),
            "himem": share(result.himem_core_s[rows].sum(), himem_cap),
        }
    return out


def task_widths(work: Workload) -> np.ndarray:
    """(n_tasks,) whether each task is multi-core (its first unit's cores)."""
    if not work.n_jobs:
        return np.zeros(work.n_tasks, bool)
    return work.cores[np.minimum(work.first_unit, work.n_jobs - 1)] > 1


def priced_total(
    result: ReplayResult,
    work: Workload,
    cfg: ReplaySettings,
    allocation: AllocationSettings,
    cores: Mapping[str, int],
) -> dict[str, Any]:
    """replay.json's ``priced_total_core_hours``, ``priced_components`` and the loads the
    HIMEM and long-queue premiums were taken at (``priced_loads``)."""
    p = task_prices(work, cfg, allocation)
    loads = realised_loads(result, work, cfg, cores)
    multi = task_widths(work)
    factor = {room: np.where(multi, congestion(loads["multi"].get(room, 0.0)),
                             congestion(loads["single"].get(room, 0.0)))
              for room in ("himem", "long_queue")}  # fmt: skip
    components = realised_components(result, p, factor)
    totals = {k: float(np.sum(v)) for k, v in components.items()}
    return {
        "priced_total_core_hours": float(sum(totals.values())),
        "priced_components": totals,
        "priced_loads": loads,
    }
