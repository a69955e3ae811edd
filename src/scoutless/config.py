"""One typed settings object: every default scoutless uses lives here.

Values come from (highest first) explicit arguments, ``SCOUTLESS_*`` environment variables
(nested with ``__``, e.g. ``SCOUTLESS_PANDA__CPU_EFFICIENCY_PERCENT=80``), the settings file
that ``SCOUTLESS_CONFIG`` names (``scoutless --config FILE`` sets it: a ``scoutless.toml``
with the same names, ``[panda] cpu_efficiency_percent = 80``), then these defaults.
"""

from __future__ import annotations

import itertools
import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

#: the environment variable naming the settings file (``scoutless --config FILE`` sets it)
CONFIG_ENV = "SCOUTLESS_CONFIG"


class PandaDefaults(BaseModel):
    """The defaults PanDA/JEDI applies when a task leaves a parameter unset."""

    cpu_efficiency_percent: float = Field(90.0, gt=0, le=100)
    base_walltime_s: float = Field(600.0, ge=0)
    core_power_hs06: float = Field(
        10.0, gt=0, description="HS06 per core when the site's is unknown"
    )
    min_ramcount_mb_per_core: float = Field(
        0.0, ge=0, description="SCOUT_RAMCOUNT_MIN: floor of the memory target"
    )


class TargetSettings(BaseModel):
    """How the per-job values of a task are reduced to one robust task value, by PanDA's own rules."""

    memory_percentile: float = Field(75.0, gt=0, le=100)
    memory_margin: float = Field(1.10, ge=1.0)
    cputime_percentile: float = Field(95.0, gt=0, le=100)
    cputime_margin: float = Field(1.5, ge=1.0)
    cputime_min_events_per_core: int = Field(10, ge=0)
    cputime_long_job_s: float = Field(6 * 3600.0, gt=0)
    walltime_percentile: float = Field(95.0, gt=0, le=100)
    n_scouts: int = Field(10, ge=1, description="the first N jobs of a task are its scouts")
    min_jobs_per_task: int = Field(3, ge=1, description="fewer finished jobs: no target")


class HistorySettings(BaseModel):
    """History features (``scoutless.features.history``) and the served-prediction guard."""

    last_k: int = Field(10, ge=2, description="quantiles over a key's last k finished jobs")
    ewm_halflife_jobs: float = Field(3.0, gt=0, description="half-life in finished jobs")
    quantiles: tuple[float, float, float] = (0.1, 0.5, 0.9)
    guard_min_rows: int = Field(
        50, ge=1, description="fewer validation rows: serve the model unadjusted"
    )
    guard_lower_quantile: float = Field(
        0.025, gt=0, lt=0.5,
        description="a rule replaces the anchor baseline only if this quantile of its margin "
        "(time-block bootstrap of validation) is above zero",
    )  # fmt: skip
    guard_blocks: int = Field(10, ge=2, description="contiguous time blocks of the bootstrap")
    guard_resamples: int = Field(400, ge=50, description="bootstrap resamples")


class SplitSettings(BaseModel):
    """How rows are held out: the table's test split, then the parts of its training rows."""

    test_fraction: float = Field(0.15, gt=0, lt=1, description="test share, random and time")
    fit_fraction: float = Field(0.70, gt=0, description="training rows the models are fitted on")
    validation_fraction: float = Field(
        0.15, gt=0, description="early stopping, tuning, temperature and the champion"
    )
    calibration_fraction: float = Field(
        0.15, gt=0, description="held out for the risk and safe policies"
    )

    def part_fractions(self) -> dict[str, float]:
        return {
            "fit": self.fit_fraction,
            "validation": self.validation_fraction,
            "calibration": self.calibration_fraction,
        }


class TrainingSettings(BaseModel):
    """Sizes that shape a training table and a bundle."""

    min_train_values: int = Field(
        5, ge=1, description="a trace target with fewer training values is dropped"
    )
    reference_rows: int = Field(
        5000, ge=1, description="training rows kept in a bundle as the drift reference"
    )
    parallel_fits: int = Field(
        0, ge=0, description="(target, family) fits trained at once, sharing the thread "
        "budget; 0: one per thread of the budget, at most 4",
    )  # fmt: skip
    refit_latest: bool = Field(
        True, description="on a time split, refit the served XGBoost models after early "
        "stopping on the fit and validation rows (the latest ones) with as many trees per "
        "row; validation figures and the guard stay the held-out fit's, the calibration "
        "rows stay held out from the served model",
    )  # fmt: skip


class WithinTaskSettings(BaseModel):
    """How the synthetic generator makes jobs of one task differ, scouts above all.

    Each field names one mechanism; none changes what submission-time features say about a
    task's targets (the generator rescales every task to its latent), only how well its
    first jobs stand for the rest. Zeroing a share switches its mechanism off.
    """

    scout_capped_input_share: float = Field(
        0.15, ge=0, le=1,
        description="tasks whose scouts get less input: one file (tasks split by files) or "
        "a capped part of nEventsPerJob",
    )  # fmt: skip
    scout_input_fraction: tuple[float, float] = Field(
        (0.3, 0.9), description="range of the cap, as a fraction of a production job's input"
    )
    avalanche_resize_share: float = Field(
        0.3, ge=0, le=1, description="tasks whose jobs after the scouts are cut smaller"
    )
    avalanche_resize_fraction: tuple[float, float] = Field(
        (0.15, 0.6), description="range of the cut, as a fraction of a scout's input"
    )
    slots_mean: float = Field(
        5.0, ge=0, description="mean extra (site, queue) slots a task's jobs spread over"
    )
    off_slot_share: tuple[float, float] = Field(
        (0.2, 0.95), description="range of a mixed task's share of slots of another size"
    )
    first_slot_off_share: float = Field(
        0.15, ge=0, le=1,
        description="P(a mixed task's first slot is off-size too): brokerage first finds "
        "queues of the asked core count, the avalanche overflows to others",
    )  # fmt: skip
    early_slot_share: float = Field(
        0.85, ge=0, le=1, description="P(a scout runs in the task's first slot, not a random one)"
    )
    slot_speed_sigma: float = Field(
        0.2, ge=0, description="log-sd of a slot's speed while the task runs there (load)"
    )
    site_speed_sigma: float = Field(
        0.2, ge=0, description="log-sd of a site's wall speed not captured by its corePower"
    )
    file_size_sigma: float = Field(
        0.5, ge=0, description="log-sd of a job's bytes read and written at fixed events"
    )
    memory_events_exponent: float = Field(
        0.02, ge=0, description="maxPSS grows as (events / typical events) ** exponent"
    )
    outlier_share: float = Field(0.02, ge=0, le=1, description="jobs on a slow node / hot input")
    outlier_wall_factor: tuple[float, float] = Field((1.5, 4.0))
    outlier_memory_factor: tuple[float, float] = Field((1.2, 2.0))
    bad_early_site_share: float = Field(
        0.06, ge=0, le=1,
        description="tasks whose first slot is broken: every scout there fails (lost "
        "heartbeat, stage-in) and is retried elsewhere, delaying the avalanche",
    )  # fmt: skip
    failure_cause_weights: tuple[float, float, float] = Field(
        (0.6, 0.25, 0.15), description="failed attempts: site problem, memory kill, walltime"
    )
    scout_abort_share: float = Field(
        0.004, ge=0, le=1, description="tasks broken after all their scouts failed"
    )
    few_jobs_share: float = Field(
        0.08, ge=0, le=1, description="tasks of only 1-2 jobs (no target: too few jobs)"
    )

    @field_validator(
        "scout_input_fraction", "avalanche_resize_fraction", "off_slot_share",
        "outlier_wall_factor", "outlier_memory_factor",
    )  # fmt: skip
    @classmethod
    def _ordered_range(cls, value: tuple[float, float], info: ValidationInfo) -> tuple:
        if not 0 < value[0] <= value[1]:
            raise ValueError(f"{info.field_name}={value}: expected 0 < low <= high")
        return value

    @field_validator("failure_cause_weights")
    @classmethod
    def _weights(cls, value: tuple[float, float, float]) -> tuple:
        if min(value) < 0 or sum(value) <= 0:
            raise ValueError(f"failure_cause_weights={value}: expected non-negative, sum > 0")
        return value


class ServiceSettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    max_batch: int = Field(10_000, ge=1, description="larger batches are refused with 413")
    admin_token: str | None = Field(
        None,
        description="a bearer token with the admin role (environment only: "
        "SCOUTLESS_SERVICE__ADMIN_TOKEN); prefer tokens_file",
    )
    tokens_file: Path | None = Field(
        None,
        description="bearer tokens, one per line: 'NAME ROLES TOKEN' (ROLES: comma-separated "
        "of predict, read, admin); without tokens (and without jwks_file) the service answers "
        "loopback callers only and refuses to bind elsewhere",
    )
    tokens: str | None = Field(
        None,
        description="the same lines as tokens_file, ';'-separated, from the environment "
        "(SCOUTLESS_SERVICE__TOKENS); never a command-line option",
    )
    jwks_file: Path | None = Field(
        None, description="JSON Web Key Set of the OIDC issuer (e.g. PanDA's IAM): RS256/ES256"
    )
    jwt_issuer: str | None = Field(None, description="the 'iss' a JWT must carry")
    jwt_audience: str | None = Field(None, description="an 'aud' a JWT must carry")
    jwt_scope_roles: dict[str, str] = Field(
        {"scoutless.predict": "predict", "scoutless.read": "read", "scoutless.admin": "admin"},
        description="JWT scope (claim 'scope', space-separated, or 'scp') -> role",
    )
    jwt_leeway_s: float = Field(30.0, ge=0, description="clock skew allowed on exp/nbf")
    metrics_open: bool = Field(
        False, description="serve /metrics without a token (for a scraper on a trusted network)"
    )
    reload_roots: list[Path] = Field(
        [],
        description="folders a reload may load a bundle from, beside the served registry "
        "or bundle folder",
    )
    #: limits while a request arrives (service/limits.py)
    max_body_mb: float = Field(64.0, gt=0, description="larger bodies: 413, before read whole")
    body_timeout_s: float = Field(30.0, gt=0, description="a body slower than this: 408")
    max_concurrent: int = Field(64, ge=1, description="requests in progress per worker; more: 503")
    log_synchronous: Literal["NORMAL", "FULL"] = Field(
        "NORMAL",
        description="SQLite prediction log: NORMAL loses no answer to a crash of the service, "
        "may lose the last commits to a power loss; FULL survives that too at ~5x the latency "
        "(an fsync per commit)",
    )
    remote_timeout_s: float = Field(2.0, gt=0)
    remote_token: str | None = Field(
        None, description="gateway mode: the bearer token sent to the per-target services"
    )
    default_alpha: float = Field(0.05, gt=0, lt=1)
    default_safe_recall: float = Field(0.9, gt=0, le=1)
    parallel_min_rows: int = Field(
        64,
        ge=0,
        description="up to this many rows the targets are predicted inline, "
        "not on the thread pool (the hand-off costs more than it saves)",
    )
    torch_threads: int | None = Field(
        1,
        ge=1,
        description="torch intra-op threads per serving process (None: torch's default, "
        "one per core); each target already predicts on its own thread, so more threads "
        "oversubscribe the cores",
    )


class InferenceSettings(BaseModel):
    """How fitted models predict; read once when the model modules are imported."""

    small_batch: int = Field(
        64,
        ge=0,
        description="up to this many rows, plain Python lists and the numpy forward "
        "pass beat pandas and torch: per-call overhead dominates a few rows",
    )
    dnn_predict_batch: int = Field(
        65_536, ge=1, description="rows per torch forward pass of a large DNN batch (peak memory)"
    )


class ListenerSettings(BaseModel):
    """The PanDA listener (``scoutless listen``): JEDI's task-status messages in,
    scout_prediction messages out (README: PanDA integration)."""

    broker: str = Field(
        "stomp://127.0.0.1:61613", description="stomp://HOST:PORT, or stomp+ssl://HOST:PORT (TLS)"
    )
    tls_ca_file: str | None = Field(
        None, description="stomp+ssl: CA certificates to verify the broker by (None: system's)"
    )
    tls_cert_file: str | None = Field(None, description="stomp+ssl: client certificate (mTLS)")
    tls_key_file: str | None = Field(None, description="stomp+ssl: the client certificate's key")
    username: str | None = None
    passcode: str | None = None
    vhost: str | None = Field(
        "/", description="STOMP host header; RabbitMQ takes it as the virtual host"
    )
    subscribe: str = "/queue/jedi_jobtaskstatus"
    publish: str = "/queue/jedi_scout_prediction"
    max_age_s: float = Field(600.0, gt=0, description="older task_status messages are ignored")
    max_clock_skew_s: float = Field(
        300.0, ge=0, description="a message stamped further ahead of our clock is malformed"
    )
    dead_letter_after: int = Field(
        3, ge=1, description="failed attempts before a message goes to the dead letter"
    )
    dead_letter_destination: str | None = Field(
        "/queue/scoutless_dead_letters",
        description="where dead letters are also published (None: only the table)",
    )
    policy: str = Field(
        "cost",
        description="what the listener and taskparams allocate; unset: allocation.default_policy",
    )
    alpha: float = Field(0.05, gt=0, lt=1)
    skip_scout_policies: list[str] = Field(
        ["risk", "safe", "value", "cost"],
        description="policies whose predictions may skip the scouts",
    )
    prefetch: int = Field(200, ge=1, description="unacked messages the broker may send ahead")
    batch_max: int = Field(64, ge=1, description="messages predicted together at most")
    reconnect_initial_s: float = Field(0.2, gt=0)
    reconnect_max_s: float = Field(10.0, gt=0)
    heartbeat_ms: int = Field(10_000, ge=0)
    receipt_timeout_s: float = Field(10.0, gt=0)
    health_port: int | None = Field(
        9466, ge=0, le=65535, description="/healthz, /metrics, on 127.0.0.1 only (no token)"
    )


class RolloutSettings(BaseModel):
    """From shadow to rollout (docs/how-to/rollout.md): the canary's seed, the impact
    figures, the guard rail that moves a harmful canary back to shadow and the evidence
    ``rollout set full`` asks for. With no ``scoutless rollout set`` yet the mode is shadow."""

    seed: int = Field(0, description="canary assignment seed (reproducible, stable per task)")
    memory_kill_codes: list[int] = Field(
        [1212, 1235], description="pilot error codes of a memory kill (PanDA's pilot)"
    )
    walltime_kill_codes: list[int] = Field(
        [1213], description="pilot error codes of a walltime kill"
    )
    bootstrap: int = Field(1000, ge=50, description="bootstrap resamples over tasks")
    confidence: float = Field(0.95, gt=0.5, lt=1, description="bootstrap interval level")
    guard_figure: str = Field(
        "first_attempt_success", description="the impact figure the guard rail watches"
    )
    guard_margin: float = Field(
        0.02, ge=0, description="canary below control by more than this (interval < 0) trips it"
    )
    guard_min_tasks: int = Field(30, ge=1, description="tasks per arm before the rail judges")
    evidence_days: float = Field(
        14.0, gt=0, description="rollout set full: the window (days) its impact evidence is from"
    )
    promise_z: float = Field(
        2.33, gt=0, description="under-allocation above alpha by this many binomial sds alerts"
    )
    promise_min_tasks: int = Field(30, ge=1, description="tasks per group before it is judged")


class DistributedSettings(BaseModel):
    """The Dask / torch-distributed path (``--scheduler``); unused by the single-process one."""

    partition_tasks: int = Field(
        50_000, ge=1, description="tasks per build partition (all their job rows at once)"
    )
    worker_memory_limit: str = Field(
        "4GB", description="per worker of a --scheduler local[:N] cluster; spills beyond it"
    )
    connect_timeout_s: float = Field(30.0, gt=0)
    torchrun_nproc_per_node: int = Field(2, ge=1, description="DNN ranks on this node")
    torchrun_args: list[str] = Field(
        default_factory=list,
        description="extra torchrun arguments, e.g. --nnodes 4 --rdzv-endpoint host:29500 "
        "(default: --standalone, one node)",
    )
    dnn_shards: int = Field(16, ge=1, description="Parquet shards of the DNN's rows (>= ranks)")
    dnn_work_root: Path | None = Field(
        None, description="where DNN work folders go (shared by all nodes); default: temp"
    )


# --------------------------------------------------------------------------- replay
# PanDA's constants for ``scoutless replay`` (scoutless.replay.config loads TOML over them)

#: every strategy a history replay runs on the same jobs (docs/how-to/replay.md says what each is)
STRATEGY_NAMES: tuple[str, ...] = ("scouts", "predicted", "hybrid", "selective", "bayes", "oracle")
#: strategies a replay may also run on request: ``canary`` (a rollout rehearsed, a share of
#: the tasks skipping their scouts, the rest as the scouts strategy, in one pool)
EXTRA_STRATEGY_NAMES: tuple[str, ...] = ("canary",)
#: how predicted, hybrid, selective and bayes turn a prediction into an allocation:
#: cost (the least expected cost), value (the calibrated 1 - alpha value), or a class policy
REPLAY_POLICIES: tuple[str, ...] = ("cost", "value", "risk", "safe", "argmax")


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
        172_800.0,
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
    long_queue_share: float = Field(
        0.5, ge=0, le=1, description="share of each pool's cores that may run long-queue jobs"
    )
    max_attempts: int = Field(5, ge=1, description="attempts per job before it fails for good")
    ram_ladder_mb_per_core: list[float] = Field(
        default_factory=lambda: [1000.0, 2000.0, 3000.0, 4000.0, 6000.0, 8000.0]
    )
    task_raise_share: float = Field(
        0.3, ge=0, le=1, description="task ramCount raised once more than this share needed it"
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
        "strategy's sizing engine learns per type)",
    )
    # the canary strategy: a rollout rehearsed (docs/how-to/rollout.md)
    canary_share: float = Field(
        0.5, gt=0, le=1, description="canary: share of the eligible tasks that skip their scouts"
    )
    canary_seed: int | None = Field(
        None, description="canary: the arms' seed; None: rollout.seed (the listener's)"
    )
    canary_arm: Literal["selective", "hybrid"] = Field(
        "selective",
        description="canary: what a drawn task runs; selective: tasks the allocation would "
        "scout are ineligible (they keep their scouts), as the listener decides",
    )
    canary_harm: CanaryHarm | None = Field(
        None, description="canary: a harm injected into the canary arm (guard rail drills)"
    )

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


class AllocationSettings(BaseModel):
    """The value and cost-aware allocations (``scoutless.allocation``)."""

    model_config = ConfigDict(extra="forbid")

    alpha: float = Field(0.05, gt=0, lt=1, description="default under-allocation share")
    default_policy: Literal["argmax", "safe", "risk", "value", "cost"] = Field(
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
        default_factory=dict,
        description="target -> its own kill cap where it differs from max_kill_probability "
        "(e.g. memory, planned without the pilot's grace, against cputime's walltime kills)",
    )
    guaranteed_memory_grace: float = Field(
        1.0,
        ge=1,
        description="memory above the allocation the site guarantees a job survives, as a "
        "factor (1: none assumed); only above 1 does the decision consider ramCount below the "
        "need (need / grace). The replay's memory_kill_factor is the site's behaviour, not this",
    )
    job_spread_points: int = Field(
        8, ge=1, le=64, description="factors of a task's jobs around its value priced per task"
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


class SizingSettings(BaseModel):
    """Online per-instance sizing (``scoutless.sizing``, ``scoutless size``)."""

    model_config = ConfigDict(extra="forbid")

    grid_points: int = Field(
        48,
        ge=8,
        le=512,
        description="quantile points of an instance's need an allocation is priced on",
    )
    prior_weight: float = Field(
        4.0,
        ge=0,
        description="pseudo-instances of the other task types' residual shape a type "
        "starts with (fades as its own instances come)",
    )
    kernel_nodes: int = Field(
        5, ge=1, le=15, description="nodes of the Gaussian kernel that smooths the residuals"
    )
    runtime_weighted: bool = Field(
        True, description="weight residuals by their instance's runtime (long instances cost more)"
    )
    failure_penalty: float = Field(
        0.25,
        ge=0,
        description="extra cost of a failed attempt (a restart's overhead), in units "
        "of max(the median need, penalty_floor_bytes) × runtime; 0: the protocol's prices only",
    )
    penalty_floor_bytes: float = Field(
        2e9, ge=0, description="the least memory a failure's overhead is priced at (a slot)"
    )
    refit_every: int = Field(
        16, ge=1, description="instances between refits of a type's model choice"
    )
    min_rows_linear: int = Field(
        8, ge=3, description="fewer rows: a type's need is not regressed on its input size"
    )
    shadow_choice: bool = Field(
        True, description="re-choose a type's model by what each candidate's plan would have cost"
    )
    shadow_runtime: bool = Field(
        True,
        description="charge a candidate's shadow cost × the instance's runtime (what the protocol charges)",
    )
    own_replaces_borrowed: int = Field(
        5,
        ge=1,
        description="outcomes of its own after which a type sized cold forgets the "
        "instances borrowed from other workflows",
    )
    fallback_growth: float = Field(
        2.0, gt=1, description="a retry past every need the model knows multiplies by this"
    )
    fields: list[str] = Field(
        default_factory=lambda: [
            "process",
            "cpus",
            "rchar",
            "rss",
            "peak_rss",
            "memory",
            "realtime",
            "status",
            "exit",
            "attempt",
        ],
        description="Nextflow trace columns the importer takes (process, realtime and a "
        "memory measure are required; the others are taken when present)",
    )
    oom_exits: list[int] = Field(
        default_factory=lambda: [137], description="exit codes of a kill that may be the OOM killer"
    )
    oom_near_share: float = Field(
        0.9,
        gt=0,
        le=1,
        description="a kill with peak_rss at least this share of the request censors memory",
    )
    scheduler_oom_exits: list[int] = Field(
        default_factory=list, description="exit codes a scheduler gives an out-of-memory kill"
    )
    walltime_exits: list[int] = Field(
        default_factory=lambda: [140], description="exit codes of a run-time limit"
    )


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SCOUTLESS_", env_nested_delimiter="__", extra="ignore"
    )

    workdir: Path = Path("scoutless-work")
    db_url: str | None = Field(
        None,
        description="SQLAlchemy URL of the PanDA-compatible history; default: SQLite in workdir",
    )
    db_schema: str | None = Field(
        "doma_panda",
        description="PostgreSQL schema of PanDA's tables, searched first (search_path "
        "'<schema>,public'); PostgreSQL skips it where it does not exist. None: server default",
    )
    db_password_file: Path | None = Field(
        None,
        description="file holding the database password, put into db_url (which then need "
        "not carry it); SCOUTLESS_DB_PASSWORD gives it from the environment",
    )
    db_password: str | None = Field(None, description="the database password (environment)")
    bins_file: Path | None = Field(None, description="TOML overriding the shipped default bins")
    seed: int = 42
    panda: PandaDefaults = PandaDefaults()
    targets: TargetSettings = TargetSettings()
    splits: SplitSettings = SplitSettings()
    training: TrainingSettings = TrainingSettings()
    service: ServiceSettings = ServiceSettings()
    inference: InferenceSettings = InferenceSettings()
    history: HistorySettings = HistorySettings()
    listener: ListenerSettings = ListenerSettings()
    within_task: WithinTaskSettings = WithinTaskSettings()
    replay: ReplaySettings = ReplaySettings()
    distributed: DistributedSettings = DistributedSettings()
    allocation: AllocationSettings = AllocationSettings()
    rollout: RolloutSettings = RolloutSettings()
    sizing: SizingSettings = SizingSettings()

    @model_validator(mode="after")
    def _one_default_policy(self) -> Settings:
        """The listener and the replay allocate ``allocation.default_policy`` unless their
        own ``policy`` is set: one setting for every entry point."""
        policy = {"policy": self.allocation.default_policy}
        if "policy" not in self.listener.model_fields_set:
            self.listener = self.listener.model_copy(update=policy)
        if "policy" not in self.replay.model_fields_set:
            self.replay = self.replay.model_copy(update=policy)
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then the environment, then the settings file, then the defaults."""
        path = settings_file()
        if path is None:
            return init_settings, env_settings, dotenv_settings, file_secret_settings
        toml = TomlConfigSettingsSource(settings_cls, toml_file=path)
        return init_settings, env_settings, toml, dotenv_settings, file_secret_settings

    def resolved_db_url(self) -> str:
        """The configured database, or the embedded default: one SQLite file in the work dir."""
        if self.db_url:
            return with_password(self.db_url, self.db_password_file, self.db_password)
        return f"sqlite:///{(self.workdir / 'history.sqlite').resolve()}"


def with_password(url: str, password_file: Path | None, password: str | None) -> str:
    """``url`` with the password from ``password_file`` (first line) or ``password``, if
    either is given and the URL carries none."""
    secret = password_file.read_text().splitlines()[0] if password_file else password
    if not secret:
        return url
    from sqlalchemy.engine import make_url  # lazily: the CLI's --help imports settings

    parsed = make_url(url)
    if parsed.password:
        return url
    return parsed.set(password=secret).render_as_string(hide_password=False)


def masked_url(text: str) -> str:
    """``text`` as shown to a user: a database URL with its password as ``***``."""
    if "://" not in text or "@" not in text:
        return text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(text).render_as_string(hide_password=True)
    except ArgumentError:
        return text


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


class SettingsFileError(ValueError):
    """The settings file cannot be used; the message names the file and the key."""


def settings_file() -> Path | None:
    """The file ``SCOUTLESS_CONFIG`` names, checked: it exists, is TOML, and every key in it
    is a setting (a misspelt key would otherwise be ignored without a word)."""
    raw = os.environ.get(CONFIG_ENV)
    if not raw:
        return None
    path = Path(raw)
    if not path.is_file():
        raise SettingsFileError(f"{CONFIG_ENV}={raw}: the settings file does not exist")
    try:
        values = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsFileError(f"{path}: not a readable TOML settings file: {exc}") from exc
    unknown = _unknown_keys(values, Settings)
    if unknown:
        raise SettingsFileError(
            f"{path}: unknown setting(s) {', '.join(unknown)} "
            "(the settings reference lists every name)"
        )
    return path


def _unknown_keys(values: dict, model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted keys of ``values`` that ``model`` has no field for; tables of a sub-model are
    checked inside it, the values of a dict-typed field (e.g. prices) are not."""
    unknown = []
    for key, value in values.items():
        field = model.model_fields.get(key)
        if field is None:
            unknown.append(f"{prefix}{key}")
            continue
        sub = field.annotation
        if isinstance(value, dict) and isinstance(sub, type) and issubclass(sub, BaseModel):
            unknown += _unknown_keys(value, sub, f"{prefix}{key}.")
    return unknown
