"""PanDA's constants for ``scoutless replay`` (``settings.replay``; scoutless.replay.config loads TOML over them)."""

from __future__ import annotations

import itertools
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from scoutless.policy_names import POLICY_NAMES

#: every strategy a history replay runs on the same jobs (docs/how-to/replay.md says what each is)
STRATEGY_NAMES: tuple[str, ...] = ("scouts", "predicted", "hybrid", "selective", "bayes", "oracle")
#: strategies a replay may also run on request: ``canary`` (a rollout rehearsed, a share of
#: the tasks skipping their scouts, the rest as the scouts strategy, in one pool) and
#: ``online`` (every job sized by the online sizer from the hybrid's prediction on)
EXTRA_STRATEGY_NAMES: tuple[str, ...] = ("canary", "online")
#: how predicted, hybrid, selective and bayes turn a prediction into an allocation:
#: cost (the least expected cost), value (the calibrated 1 - alpha value), or a class policy;
#: the default first, as the replay's tables list them
REPLAY_POLICIES: tuple[str, ...] = POLICY_NAMES[::-1]
#: the long queue's maxtime when none is configured: two days, a common grid queue's
DEFAULT_QUEUE_MAXTIME_S = 172_800.0


class ResourceType(BaseModel):
    """One PanDA resource type: slots of this memory per core.

    The type with the least MB/core of a width (single- or multi-core) is that width's
    pool: its ``cores`` are the pool's (None: sized to the history's load). A type with more
    memory per core (HIMEM) runs on the same cores, at most ``cores`` of them at once
    (None: ``himem_share`` of the pool), as a PanDA queue's ``resource_type_limits`` bound it.
    """

    model_config = ConfigDict(extra="forbid")

    mb_per_core: float = Field(gt=0)
    multicore: bool
    cores: int | None = Field(
        None, ge=1, description="pool cores (HIMEM: its cap); None: from the load / himem_share"
    )


def _panda_resource_types() -> dict[str, ResourceType]:
    return {
        "SCORE": ResourceType(mb_per_core=2000, multicore=False),
        "MCORE": ResourceType(mb_per_core=2000, multicore=True),
        "SCORE_HIMEM": ResourceType(mb_per_core=3000, multicore=False),
        "MCORE_HIMEM": ResourceType(mb_per_core=3000, multicore=True),
    }


class CanaryHarm(BaseModel):
    """A harm injected into a replayed canary (a fire drill for the guard rail): the
    canary's allocation scaled for some task families."""

    model_config = ConfigDict(extra="forbid")

    cputime_factor: float = Field(1.0, gt=0, description="the canary's cpuTime times this")
    memory_factor: float = Field(1.0, gt=0, description="the canary's ramCount times this")
    processingtypes: list[str] = Field(
        default_factory=list, description="the harmed families (processingtype); empty: all"
    )


class ReplaySettings(BaseModel):
    """Every constant of the replay, with PanDA's default."""

    model_config = ConfigDict(extra="forbid")

    strategies: list[str] = Field(default_factory=lambda: list(STRATEGY_NAMES))
    policy: str = Field(
        "cost",
        description="what predicted/hybrid/selective/bayes allocate: "
        + ", ".join(REPLAY_POLICIES)
        + "; unset: allocation.default_policy",
    )
    alpha: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="value/risk policies' under-allocation; None: allocation.alpha",
    )
    # scouts (JEDI)
    n_scouts: int = Field(10, ge=1, description="scout jobs per task")
    avalanche_min_finished_share: float = Field(
        0.5, gt=0, le=1, description="early avalanche once this share of scouts finished (5/10)"
    )
    check_interval_s: float = Field(600.0, gt=0, description="JEDI's assessment period")
    scout_priority: bool = Field(
        True, description="scouts get JobGenerator's boost: priority max(901, task's + 1)"
    )
    default_task_priority: int = Field(
        0, description="jedi_tasks.currentpriority where a history has none (JEDI's default)"
    )
    scout_min_success_rate: float | None = Field(
        None, ge=0, le=1, description="task's scoutSuccessRate/10; None: only 0 successes break"
    )
    exhausted_ram_mb_per_core: float = Field(
        4000.0, gt=0, description="scout ramCount above this while the request was below: exhausted"
    )
    exhausted_min_new_jobs: int = Field(20, ge=0, description="JEDI's nNewJobsCutoff")
    exhausted_resume_after_s: float | None = Field(
        None, ge=0, description="an operator resumes an exhausted task after this; None: never"
    )
    retune_done_jobs: list[int] = Field(
        default_factory=lambda: [5, 100],
        description="finished jobs of a task (scouts included) at which JEDI recalculates "
        "its parameters (propagateResultToJEDI: nDoneJobs in [5, 100])",
    )
    # execution and failures (pilot, batch system)
    memory_kill_factor: float = Field(
        2.0, gt=0, description="k: killed when maxPSS > k x allocation (1 = strict cgroups)"
    )
    queue_maxtime_s: float | None = Field(
        DEFAULT_QUEUE_MAXTIME_S,
        gt=0,
        description="the long queue's maxtime (s); raised to the history's longest job, "
        "which fitted its queue; None: that longest job",
    )
    short_maxtime_s: float | None = Field(
        86_400.0,
        gt=0,
        description="the short queue's maxtime (s): a longer walltime limit needs the long "
        "queue; None: one queue",
    )
    max_core_count: int = Field(
        1024,
        ge=1,
        description="the most cores a job of the site's widest queue holds: a task asking "
        "for more (coreCount) is outside the domain and refused",
    )
    max_ram_mb_per_core: float | None = Field(
        None,
        gt=0,
        description="the most MB a core the site's largest queue gives (its maxrss / cores): "
        "no answer allocates more; None: the top of ram_ladder_mb_per_core",
    )
    max_io_kbps_per_core: float = Field(
        1_000_000.0, gt=0, description="the most kB/s a core an answer states (ioIntensity)"
    )
    long_queue_share: float = Field(
        0.5, ge=0, le=1, description="share of each pool's cores that may run long-queue jobs"
    )
    max_attempts: int = Field(5, ge=1, description="attempts per job before it fails for good")
    ram_ladder_mb_per_core: list[float] = Field(
        default_factory=lambda: [1000.0, 2000.0, 3000.0, 4000.0, 6000.0, 8000.0]
    )
    task_raise_share: float = Field(
        0.3,
        ge=0,
        le=1,
        description="the task's ramCount raised instead of a killed job's files once more "
        "than this share of its input files were raised above it",
    )
    memory_retry_action: Literal["increase_memory", "increase_memory_xtimes"] = Field(
        "increase_memory",
        description="the retrial rule's action for a memory kill (panda-server retryModule): "
        "the ladder, or xtimes with retry_ram_split_rule's RX/RY/RZ",
    )
    retry_ram_split_rule: str = Field(
        "",
        description="the tasks' RX=…,RY=…,RZ=… split rules increase_memory_xtimes reads "
        "(RY scales the job's ramCount by RY / the task's; RZ caps it, MB a job)",
    )
    online_jedi_retry: bool = Field(
        True,
        description="online: JEDI's memory retry (the retrial rule's increase_memory) acts "
        "beside the sizer's, the retry getting the larger, as the docs recommend; false: an "
        "operator removed the rule for the sized tasks (a retryerrors rule), the ladder acts "
        "only where the sizer has nothing",
    )
    default_ram_mb_per_core: float = Field(
        2000.0, gt=0, description="allocation when the task requests no ramCount"
    )
    # the pool of job slots
    resource_types: dict[str, ResourceType] = Field(default_factory=_panda_resource_types)
    himem_share: float = Field(
        0.2,
        ge=0,
        le=1,
        description="HIMEM types: at most this share of the pool's cores (an explicit cores "
        "wins); 0.2 = (meanrss 2200 - 2000) / (3000 - 2000), see docs/concepts/replay-site.md",
    )
    target_utilisation: float = Field(
        0.5, gt=0, le=1, description="auto-sized pools: mean history load / cores"
    )
    cdf_points: int = Field(101, ge=2, description="quantiles kept per CDF in replay.json")
    workers: int = Field(1, ge=1, description="strategies replayed in parallel processes")
    trace_type_columns: list[str] = Field(
        ["executable", "user"],
        description="a trace's columns whose values make a job's task type (the online "
        "strategy's online sizer learns per type)",
    )
    trace_incumbent_cap: bool = Field(
        True,
        description="on a trace, each target's kill cap is at most the users' requests' own "
        "kill share in the table's training rows ((kills + 1) / (rows + 2)): the model's "
        "strategies plan no more kills than the incumbent has",
    )
    # the canary strategy: a rollout rehearsed (docs/how-to/rollout.md)
    canary_share: float = Field(
        0.5, gt=0, le=1, description="canary: share of the eligible tasks that skip their scouts"
    )
    canary_seed: int | None = Field(
        None, description="canary: the arms' seed; None: rollout.seed (the listener's)"
    )
    canary_arm: Literal["selective", "hybrid", "online", "control"] = Field(
        "selective",
        description="canary: what a drawn task runs; selective: tasks the allocation would "
        "scout are ineligible (they keep their scouts), as the listener decides; hybrid: "
        "every task eligible, the canary's run as the hybrid; online: as the online "
        "strategy (every job sized by the online sizer, JEDI's ladder and re-tuning beside "
        "it); control: as the control arm, scouts and all (an A/A rehearsal: the arms "
        "differ only by the draw)",
    )
    canary_harm: CanaryHarm | None = Field(
        None, description="canary: a harm injected into the canary arm (guard rail drills)"
    )

    @property
    def ram_limit_mb_per_core(self) -> float:
        """The most MB a core the site's largest queue gives (``max_ram_mb_per_core``, else
        the top of the ram ladder JEDI raises a task along)."""
        return self.max_ram_mb_per_core or self.ram_ladder_mb_per_core[-1]

    @property
    def walltime_limit_s(self) -> float:
        """The longest queue's maxtime: no job runs longer at this site."""
        return self.queue_maxtime_s or DEFAULT_QUEUE_MAXTIME_S

    @field_validator("strategies")
    @classmethod
    def _known_strategies(cls, value: list[str]) -> list[str]:
        known = STRATEGY_NAMES + EXTRA_STRATEGY_NAMES
        unknown = [s for s in value if s not in known]
        if unknown:
            raise ValueError(f"unknown strategy {unknown[0]!r}; expected {', '.join(known)}")
        if not value:
            raise ValueError("at least one strategy is needed")
        return list(dict.fromkeys(value))

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, value: str) -> str:
        if value not in REPLAY_POLICIES:
            raise ValueError(f"unknown policy {value!r}; expected {', '.join(REPLAY_POLICIES)}")
        return value

    @field_validator("ram_ladder_mb_per_core")
    @classmethod
    def _increasing(cls, value: list[float]) -> list[float]:
        if not value or any(b <= a for a, b in itertools.pairwise(value)):
            raise ValueError("must be a non-empty, strictly increasing list")
        return value

    @field_validator("retune_done_jobs")
    @classmethod
    def _positive_increasing(cls, value: list[int]) -> list[int]:
        if any(n < 1 for n in value) or any(b <= a for a, b in itertools.pairwise(value)):
            raise ValueError("must be positive, strictly increasing job counts")
        return value

    @field_validator("resource_types")
    @classmethod
    def _some_types(cls, value: dict[str, ResourceType]) -> dict[str, ResourceType]:
        if not any(not t.multicore for t in value.values()) or not any(
            t.multicore for t in value.values()
        ):
            raise ValueError("need at least one single-core and one multi-core resource type")
        return value
