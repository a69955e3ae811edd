"""What a strategy hands the replay's engine: its plan (what it allocates at submission,
whether it scouts and re-tunes) and, for a canary, the arms it drew. One home below both
the engine, which runs a plan, and the strategies, which make one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from scoutless.sizing.protocol import Sizer


class UnitSizer(Sizer[int, int], Protocol):
    """A strategy that sizes each unit online (the traces' and the history's ``online``),
    in the `Sizer` protocol's verbs keyed by the replay's task, an instance known by its
    unit: ``first`` when the unit is released or, with the plan's ``sizes_at_start``, when
    its first attempt starts (its ramCount, MB/core; NaN: the plan's), ``walltime`` then
    too (its walltime limit, s; NaN: the plan's), ``retry`` after a memory kill above
    ``failed`` MB (NaN: PanDA's ladder), ``learn`` each outcome as it ends on the replay's
    clock: a success its need (MB) and runtime (s); a memory kill its need's lower bound
    (kill factor × allocation, censored) and how long it ran; a walltime kill a need of
    NaN (nothing is learnt of its memory) and its runtime, the limit it hit, censored (its
    run lies above it)."""

    def walltime(self, task: int, unit: int) -> float:
        """The unit's walltime limit (s) for its first attempt; NaN: the plan's."""
        ...

    def summary(self) -> dict[str, float]:
        """What replay.json reports of it."""
        ...


@dataclass(frozen=True)
class CanaryDraw:
    """A replayed canary's decisions per task: the arm the listener would give it, with
    the reason it logs, what the task's prediction says (the injected harm included) and
    whether it runs its scouts (the control arm and the ineligible tasks; every task where
    the canary runs as the control: an A/A rehearsal)."""

    seed: int
    arms: np.ndarray
    reasons: np.ndarray
    ram: np.ndarray  # MB/core
    cputime: np.ndarray  # HS06·s/event
    scouted: np.ndarray  # bool


@dataclass(frozen=True)
class StrategyPlan:
    """What a strategy knows at submission and what it does afterwards."""

    name: str
    ram: np.ndarray  # ramCount per task at submission, MB/core
    cputime: np.ndarray  # cpuTime per task at submission, HS06·s/event (NaN: queue maxtime)
    #: scouts first, for every task or per task (selective: an (n_tasks,) bool array)
    use_scouts: bool | np.ndarray
    retune: bool
    #: whether a re-tuning may lower cpuTime; the first jobs to finish are the short ones,
    #: so an estimate from them is biased low (JEDI lowers anyway; the hybrid does not);
    #: for every task or per task
    retune_lowers_cputime: bool | np.ndarray = True
    #: walltime per task in seconds, used instead of cpuTime × events (traces: the request)
    walltime: np.ndarray | None = None
    #: the canary's arms and predictions per task (``strategies.canary_draw``), carried
    #: into the result
    canary: CanaryDraw | None = None
    #: keep every attempt (:class:`AttemptLog`): what ``replay --write-history`` writes
    record: bool = False
    #: per unit, ramCount (MB/core) and walltime limit (s) instead of the task's (oracle)
    unit_ram: np.ndarray | None = None
    unit_walltime: np.ndarray | None = None
    #: sizes each unit's memory as it is released, learning every outcome (``UnitSizer``)
    sizer: UnitSizer | None = None
    #: the sizer sizes a first attempt when it starts, not when it is released: the
    #: history releases a task's jobs at once, where JEDI generates them as the queue
    #: drains, so a job not yet dispatched is sized from every outcome learnt before
    sizes_at_start: bool = False
    #: JEDI's memory retry acts beside the sizer's (both writers: the retry gets the
    #: larger); False: the ladder only where the sizer has nothing (an operator removed
    #: the retrial rule)
    ladder_beside_sizer: bool = False
