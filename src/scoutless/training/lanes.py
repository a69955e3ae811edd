"""Fits side by side: a bundle's (target, family) fits are independent of each other.

On a few cores, one thread per fit with several fits at once beats every thread on one fit
after another: a DNN step is too small to keep two cores busy (XGBoost's rounds are
about even either way), so the lanes share the machine's threads between them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

#: lanes chosen when the settings say auto (0): one per core up to this many, so memory
#: (every lane holds its own model and batches) stays near one fit's on big machines
MAX_AUTO_LANES = 4


@dataclass(frozen=True)
class Lanes:
    """How many fits run at once, and the threads each may use."""

    lanes: int
    threads: int


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def plan_lanes(threads: int | None, n_fits: int, lanes: int = 0) -> Lanes:
    """``threads``: the run's thread budget (None: every CPU this process may use);
    ``lanes``: fits at once (0: auto, one per budgeted thread, at most MAX_AUTO_LANES)."""
    budget = threads or available_cpus()
    chosen = lanes or min(budget, MAX_AUTO_LANES)
    chosen = max(1, min(chosen, n_fits, budget))
    return Lanes(chosen, max(1, budget // chosen))


def run_in_lanes(jobs: Sequence[Callable[[], T]], lanes: int) -> list[T]:
    """Every job's result, in the jobs' order; ``lanes`` jobs run at once (threads: the
    fits release the GIL in torch and XGBoost). The first failure cancels what has not
    started and is raised."""
    if lanes <= 1:
        return [job() for job in jobs]
    with ThreadPoolExecutor(lanes, thread_name_prefix="fit") as pool:
        futures = [pool.submit(job) for job in jobs]
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise
