"""The prediction service and its inference path (``settings.service``, ``settings.inference``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field


class ServiceSettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    max_batch: int = Field(
        10_000, ge=1, description="larger batches: 413, counted while the body arrives"
    )
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
    allowed_hosts: list[str] = Field(
        [],
        description="Host names (without port) the service answers to beside localhost, "
        "127.0.0.1 and [::1]; checked without tokens (a page renamed to 127.0.0.1 by DNS "
        "rebinding is refused), and with tokens too once set",
    )
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
    max_concurrent: int = Field(
        64,
        ge=1,
        description="requests in progress per worker, a request counted once its body is in; "
        "more: 503",
    )
    max_body_values: int = Field(
        2_500_000,
        ge=1,
        description="JSON values in a prediction request's body (room for 10,000 tasks of "
        "250 values each); more: 413, counted while the body arrives",
    )
    max_uploads: int = Field(
        256,
        ge=1,
        description="requests per worker whose body is still arriving in several parts; more "
        "such uploads: 503 (a body that arrives at once is never refused for it)",
    )
    header_timeout_s: float = Field(
        10.0,
        gt=0,
        description="a connection whose request line and headers are not in within this "
        "long (of its opening, or of the previous answer) is closed",
    )
    log_synchronous: Literal["NORMAL", "FULL"] = Field(
        "NORMAL",
        description="SQLite prediction log: NORMAL loses no answer to a crash of the service, "
        "may lose the last commits to a power loss; FULL survives that too, at the cost of "
        "an fsync per commit in every answer's latency",
    )
    remote_timeout_s: float = Field(2.0, gt=0)
    remote_token: str | None = Field(
        None, description="gateway mode: the bearer token sent to the per-target services"
    )
    default_alpha: float = Field(0.05, gt=0, lt=1, description="unset: allocation.alpha")
    default_safe_recall: float = Field(0.9, gt=0, le=1)
    parallel_min_rows: int = Field(
        64,
        ge=0,
        description="up to this many rows the targets are predicted inline, "
        "not on the thread pool (the hand-off costs more than it saves)",
    )
    gather_turns: int = Field(
        3,
        ge=0,
        description="event-loop turns a group of small requests may wait while each turn "
        "brings it another request (0: compute what one turn gathered): a group's models and "
        "decisions cost about as much as one request's",
    )
    torch_threads: int | None = Field(
        1,
        ge=1,
        description="torch intra-op threads per serving process (None: torch's default, "
        "one per core); each target already predicts on its own thread, so more threads "
        "oversubscribe the cores",
    )


class InferenceSettings(BaseModel):
    """How fitted models predict: the batch sizes that choose their paths, which a process
    takes from its settings when it starts (``scoutless.fast_paths``)."""

    small_batch: int = Field(
        64,
        ge=0,
        description="up to this many rows, plain Python lists and the numpy forward "
        "pass beat pandas and torch: per-call overhead dominates a few rows",
    )
    dnn_predict_batch: int = Field(
        65_536, ge=1, description="rows per torch forward pass of a large DNN batch (peak memory)"
    )
