"""The resources the sizer sizes, each with its own prices: any need revealed by a success
and bounded below by a kill is sized by the same engine, the same conditional retry.

- **memory** (peak RSS, bytes): an attempt that fits wastes its excess × its runtime; one
  that fails its whole allocation × its runtime (the peers' protocol);
- **walltime** (run time, ms; a walltime kill is a lower bound at the limit it was
  given): an attempt that fits wastes cores × (limit − run time) at the walltime-slack
  price (the allocation prices' walltime slack per core-hour: brokerage and back-filling see the
  limit, not the use), one that is killed the core-hours it ran (cores × its limit) —
  the replay's priced components (`replay/priced.py`); the engine plans a kill with
  the replay's ``kill_overhead`` too (the retry runs the job again: × the need's median),
  and a retry is at least the killed limit × ``sizing.walltime_retry_growth``.

An outcome's weight (what its cost scales with, the engine's ``runtime``) is the runtime
for memory and the cores for walltime."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from scoutless.allocation.costs import walltime_prices
from scoutless.config import Settings
from scoutless.sizing.distribution import FailurePrice
from scoutless.sizing.features import Release

#: bytes·ms → GB·h
GBH = 1e-9 / 3.6e6
#: core·ms → core-hours
CORE_H = 1.0 / 3.6e6
#: the resources `scoutless size --resource` and the sizing benchmark take
RESOURCES: tuple[str, ...] = ("memory", "walltime")


@dataclass(frozen=True)
class Resource:
    """One sized resource: the instance table's columns of its need, the user's request
    and the peak the users' presets are booked against, the unit its wastage is reported
    in (a results key's suffix) and that unit per need-unit × weight, its prices per unit
    of excess (``slack_price``) and of a failed allocation (``kill_price``), both × the
    outcome's weight (``runtime`` or ``cores``)."""

    name: str
    need: str
    request: str
    peak: str
    unit: Literal["gbh", "core_h"]
    scale: float
    slack_price: float = 1.0
    kill_price: float = 1.0
    #: what the engine adds to a failure's price when it plans: this many times the
    #: need's median × the weight (a retry's wait and run again; not booked in the tally)
    restart_overhead: float = 0.0
    #: a retry is at least the failed allocation × this (1: the engine's retry alone)
    retry_growth: float = 1.0
    weight_by: Literal["runtime", "cores"] = "runtime"

    def weight(self, runtime: float, cores: float) -> float:
        """What an outcome's cost scales with (the engine's ``runtime`` argument)."""
        return float(runtime if self.weight_by == "runtime" else cores)

    def failure_price(self) -> Callable[[Release], FailurePrice] | None:
        """The engine's price of a failed attempt in units of excess (None: the engine's
        own, the protocol's memory price with a restart's overhead). Where an instance's
        ``retry_at`` says someone else retries it there (JEDI, at the queue's maxtime), the
        failure also costs that retry's excess over the need (about ``retry_at`` less the
        median need), not the engine's own retries close above it."""
        if self.name == "memory":
            return None
        slack = max(self.slack_price, 1e-9)
        price = FailurePrice(holds=self.kill_price / slack, per_median=self.restart_overhead / slack)

        def priced(release: Release) -> FailurePrice:
            retry = release.retry_at
            if not math.isfinite(retry):
                return price
            return FailurePrice(price.fixed + retry, price.holds, price.per_median - 1.0)

        return priced


MEMORY = Resource("memory", need="rss", request="memory", peak="peak_rss", unit="gbh", scale=GBH)


def walltime(settings: Settings) -> Resource:
    """Walltime at the settings' prices: slack at ``walltime_slack_core_hour``, a kill its
    core-hours."""
    slack, overhead = walltime_prices(settings.allocation.prices)
    return Resource(
        "walltime", need="realtime", request="time", peak="realtime", unit="core_h",
        scale=CORE_H, slack_price=slack, restart_overhead=overhead,
        retry_growth=settings.sizing.walltime_retry_growth,
        weight_by="cores",
    )  # fmt: skip


def resource(name: str, settings: Settings) -> Resource:
    """A resource by name (`RESOURCES`). Raises ValueError naming the known ones."""
    if name == "memory":
        return MEMORY
    if name == "walltime":
        return walltime(settings)
    raise ValueError(f"unknown resource {name!r}; expected one of {', '.join(RESOURCES)}")
