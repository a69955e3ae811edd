"""The STOMP listener and the rollout it follows (``settings.listener``, ``settings.rollout``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


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
    alpha: float = Field(0.05, gt=0, lt=1, description="unset: allocation.alpha")
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
