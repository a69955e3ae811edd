"""What an answer may allocate at all: finite, set, within the site's largest queue.

A model reads a task it was never trained on as well as it can, and its value can leave
any sense (a walltime of -1 s, 10**68 MB a core): nothing a site can allocate. Every
recommended value passes :meth:`AnswerBounds.clamp` where it is formed (a class's
recommended value, a task's own value under the value and cost policies), before the
answer's ``p_sufficient`` and class are read from it, so those agree with what is
allocated. The limits are the site's (``Settings.replay``): memory per core of its largest
queue, the longest queue's maxtime, cpuTime of an event that fills the longest queue on
the widest job at the default corePower, ``max_io_kbps_per_core``. The least is what JEDI
stores as set: one unit of its integer columns (a cpuTime, walltime or ramCount of 0 reads
as unset: no limit, or the default), 0 for ioIntensity. A target the site has no limit
for (a trace's) is held to finite and non-negative only.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from scoutless.config import Settings

#: the bound of a target the site sets no limit for: the largest finite float
UNBOUNDED = sys.float_info.max
#: the least value JEDI stores as set, per target (cpuTime below 10 HS06s goes in
#: mHS06sPerEvent: 0.001 is its unit); others: 0
LEAST_SET: dict[str, float] = {"memory": 1.0, "cputime": 0.001, "walltime": 1.0}


@dataclass(frozen=True)
class AnswerBounds:
    """Per target, the most an answer allocates (in the target's unit)."""

    upper: Mapping[str, float]

    @classmethod
    def of(cls, settings: Settings) -> AnswerBounds:
        site = settings.replay
        wall = site.walltime_limit_s
        return cls(
            {
                "memory": site.ram_limit_mb_per_core,
                "walltime": wall,
                "cputime": wall * settings.panda.core_power_hs06 * site.max_core_count,
                "io": site.max_io_kbps_per_core,
            }
        )

    def limit(self, target: str) -> float:
        return float(self.upper.get(target, UNBOUNDED))

    @staticmethod
    def least(target: str) -> float:
        return LEAST_SET.get(target, 0.0)

    def clamp(self, target: str, values: np.ndarray) -> np.ndarray:
        """``values`` within [the least set, the target's limit]; NaN (no reading at all)
        at the limit: a job given the most the site has runs, one given nothing does not."""
        high = self.limit(target)
        out = np.minimum(np.maximum(values, self.least(target)), high)
        if np.isnan(out).any():
            out = np.where(np.isnan(out), high, out)
        return out

    def clamp_one(self, target: str, value: float) -> float:
        """:meth:`clamp` of one number."""
        high = self.limit(target)
        return high if value != value else min(max(float(value), self.least(target)), high)

