"""The cost-aware allocation's prices and policy (``settings.allocation``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from scoutless.policy_names import PolicyName


class Prices(BaseModel):
    """What the cost-aware allocation weighs, in core-hours (one core busy for one hour).

    docs/concepts/allocation.md states why each default is what it is.
    """

    model_config = ConfigDict(extra="forbid")

    kill_overhead: float = Field(
        1.0,
        ge=0,
        description="extra cost of a killed attempt per core-hour it wasted "
        "(the retry's wait behind the queue, the task's delay)",
    )
    memory_gb_hour: float = Field(
        0.25,
        ge=0,
        description="one GB held and unused for an hour above the slot's share "
        "(a standard slot has 2 GB a core: a GB-hour idles half a core-hour of a full node; "
        "charged at half of that, as not every node is memory-bound)",
    )
    memory_overuse_gb_hour: float = Field(
        0.5,
        ge=0,
        description="one GB used above the allocation for an hour (within the pilot's grace "
        "it survives, on memory the scheduler gave to other jobs: twice the slack's price)",
    )
    himem_core_hour: float = Field(
        0.5, ge=0, description="premium per core-hour run in a HIMEM slot (scarcer)"
    )
    long_queue_core_hour: float = Field(
        0.25, ge=0, description="premium per core-hour on a queue longer than the short one"
    )
    walltime_slack_core_hour: float = Field(
        0.05,
        ge=0,
        description="per core-hour of walltime limit asked for and not used "
        "(brokerage and back-filling see the limit, not the use)",
    )
    scout_delay_hour: float = Field(
        20.0,
        ge=0,
        description="per hour that a task waits for its scouts before its production jobs go out",
    )
    scout_error_sigma: float = Field(
        0.05,
        ge=0,
        description="spread (log scale) of the scouts' measured value around the "
        "task's need (the replay's scouts sit at a median 1.00x of the need, below it on about "
        "30 % of tasks, mostly by a little)",
    )
    scout_wait_s: float = Field(
        6000.0,
        gt=0,
        description="how long a task waits for its scouts (PanDA: the scouts' "
        "queue time and run; the replay's scouts measured 5,766 s at the median)",
    )


#: per width (single, multi), each capped room's (himem, long_queue) mean busy share
RoomLoadsSetting = dict[Literal["single", "multi"], dict[Literal["himem", "long_queue"], float]]


class AllocationSettings(BaseModel):
    """The value and cost-aware allocations (``scoutless.allocation``)."""

    model_config = ConfigDict(extra="forbid")

    alpha: float = Field(0.05, gt=0, lt=1, description="default under-allocation share")
    default_policy: PolicyName = Field(
        "cost",
        description="the policy of every entry point not told one: the service, the listener, "
        "taskparams, the client (the server's) and the replay",
    )
    prices: Prices = Prices()
    #: resource type (e.g. MCORE_HIMEM) -> the prices that differ there
    resource_prices: dict[str, dict[str, float]] = Field(default_factory=dict)
    grid_points: int = Field(
        48, ge=8, le=512, description="quantile points of a task's value that price an allocation"
    )
    max_kill_probability: float = Field(
        0.25,
        gt=0,
        lt=1,
        description="the cost-aware allocation keeps each target's predicted kill probability "
        "per job at most this, assuming only the guaranteed memory grace (a constraint, not a "
        "price; 0.25: PanDA's own P75 x 1.10 ramCount leaves a quarter of a task's jobs above "
        "it; docs/concepts/allocation.md has the measurements)",
    )
    kill_probability_by_target: dict[str, float] = Field(
        default_factory=lambda: {"memory": 0.5},
        description="target -> its own kill cap where it differs from max_kill_probability. "
        "Memory 0.5: planned without the pilot's grace, a planned memory kill is realised "
        "only above twice the allocation; at 0.5 the hybrid's realised memory kills stay "
        "below the scouts' (docs/concepts/allocation.md has the sweep and its figures)",
    )
    guaranteed_memory_grace: float = Field(
        1.0,
        ge=1,
        description="memory above the allocation the site guarantees a job survives, as a "
        "factor (1: none assumed); only above 1 does the decision consider ramCount below the "
        "need (need / grace). The replay's memory_kill_factor is the site's behaviour, not this",
    )
    memory_kill_share: float = Field(
        1.0,
        gt=0,
        le=1,
        description="the share of a memory kill's whole-run price (its cores' run and "
        "kill_overhead, in memory slack at memory_gb_hour) the online sizer charges for an "
        "allocation below the need (the replay's online strategy and the job follower). 1: "
        "the whole price, an upper bound (the site kills only past the pilot's grace; below "
        "it a job runs on at the overuse price). 0.25 gave the least priced total on the 20k "
        "demo at replay seeds 3 and 4 and memory slack within 1.01x the hybrid's, but memory "
        "kills 0.30-0.50x its and a rollout rehearsal that no longer shows the online arm "
        "killing no more than the control; 0.5: memory slack 1.05-1.06x the hybrid's (the "
        "Bayes decision's 1.05x), kills 0.22-0.23x, the rehearsal missed at its smallest size "
        "(docs/how-to/replay.md)",
    )
    memory_kill_grace: bool = Field(
        False,
        description="the online memory sizer (the replay's online strategy, the job "
        "follower) plans with the site's kill rule, as the submission's decision does: a "
        "need above the allocation runs on within replay.memory_kill_factor x it, at "
        "memory_overuse_gb_hour, and only a need above that is a kill. Off by default: on "
        "the 20k demo (replay seeds 0-2) it holds 0.96x the hybrid's memory slack against "
        "1.11-1.12x, at 0.68-0.73x its memory kills against 0.08-0.23x and the same priced "
        "total (within 0.5 %), and the rollout rehearsal no longer shows the online arm "
        "killing no more than the control (docs/how-to/replay.md); false: every need above "
        "the allocation is priced as a kill",
    )
    load_rounds: int = Field(
        2,
        ge=0,
        le=8,
        description="the replay's cost policy: rounds that re-decide at the long queue's and "
        "HIMEM's load the last choice put on them (0: the load the needs alone carry)",
    )
    job_spread_points: int = Field(
        8, ge=1, le=64, description="factors of a task's jobs around its value priced per task"
    )
    room_loads: RoomLoadsSetting | None = Field(
        None,
        description="per width (single, multi) the mean busy share of its HIMEM and long-queue "
        "caps the decision prices those rooms at (congestion 1 / (1 - load)), where the site's "
        "load is known; unset: the loads the bundle learnt from its training history "
        "(room_loads.json), or 0 for a bundle without them",
    )
    scout_unseen: list[str] = Field(
        default_factory=lambda: ["processingtype", "transpath"],
        description="categorical features whose unseen value makes `selective` scout a task "
        "(a new application); unseen users or releases are common and the models handle them",
    )

    @field_validator("resource_prices")
    @classmethod
    def _known_prices(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for rtype, override in value.items():
            try:
                Prices.model_validate({**Prices().model_dump(), **override})
            except ValidationError as exc:
                err = exc.errors()[0]
                key = ".".join(str(p) for p in err["loc"])
                raise ValueError(f"{rtype}.{key}: {err['msg']}") from None
        return value

    @field_validator("room_loads")
    @classmethod
    def _loads_in_range(
        cls, value: dict[str, dict[str, float]] | None
    ) -> dict[str, dict[str, float]] | None:
        for width, rooms in (value or {}).items():
            for room, load in rooms.items():
                if not 0 <= load < 1:
                    raise ValueError(f"{width}.{room}: a load must be in [0, 1), got {load}")
        return value

    @field_validator("kill_probability_by_target")
    @classmethod
    def _caps_in_range(cls, value: dict[str, float]) -> dict[str, float]:
        for target, cap in value.items():
            if not 0 < cap < 1:
                raise ValueError(f"{target}: a kill cap must be in (0, 1), got {cap}")
        return value

    def kill_cap(self, target: str) -> float:
        """The kill-probability cap of one target's cost-aware allocation."""
        return self.kill_probability_by_target.get(target, self.max_kill_probability)

    def prices_for(self, resource_type: str | None) -> Prices:
        """The global prices with one resource type's overrides."""
        override = self.resource_prices.get(resource_type or "", {})
        return (
            Prices.model_validate({**self.prices.model_dump(), **override})
            if override
            else self.prices
        )
