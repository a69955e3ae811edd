"""Alert rules over monitored figures: records, a log line, an optional webhook.

Rules live in one typed place, :class:`AlertConfig` (defaults below, or a TOML file)::

    webhook_url = "http://127.0.0.1:9000/hook"   # optional
    [[rules]]
    name = "accuracy-low"
    metric = "accuracy"      # accuracy, macro_f1, under_rate, over_rate, psi, ks_stat,
    op = "<"                 # ks_pvalue, prior_psi_predicted, prior_psi_actual
    threshold = 0.6
    windows = 2              # consecutive windows (with >= min_samples) that must breach
    scope = "*"              # a target or feature name; "*" = each one
    retrain = true           # the monitor loop retrains when this fires

An alert is stored once per (rule, scope, window): re-checking the same figures fires
nothing new, so the loop can check as often as it likes.
"""

from __future__ import annotations

import json
import logging
import operator
import tomllib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import httpx
import pandas as pd
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import (
    Column,
    DateTime,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    select,
)
from sqlalchemy import Sequence as DbSequence

logger = logging.getLogger("scoutless.alerts")

ALERTS_TABLE = "scoutless_alerts"
METRICS = (
    "accuracy", "macro_f1", "under_rate", "over_rate", "psi", "ks_stat", "ks_pvalue",
    "prior_psi_predicted", "prior_psi_actual",
)  # fmt: skip
_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


class AlertRule(BaseModel):
    """Fire when ``metric op threshold`` holds in the last ``windows`` windows of a scope."""

    name: str = Field(min_length=1, max_length=64)
    metric: Literal[
        "accuracy", "macro_f1", "under_rate", "over_rate", "psi", "ks_stat", "ks_pvalue",
        "prior_psi_predicted", "prior_psi_actual",
    ]  # fmt: skip
    op: Literal["<", "<=", ">", ">="]
    threshold: float
    windows: int = Field(1, ge=1)
    scope: str = "*"
    min_samples: int = Field(20, ge=1, description="windows with fewer samples are skipped")
    severity: Literal["info", "warning", "critical"] = "warning"
    retrain: bool = False

    def breached(self, value: float) -> bool:
        return bool(_OPS[self.op](value, self.threshold))


DEFAULT_RULES: tuple[AlertRule, ...] = (
    AlertRule(name="accuracy-low", metric="accuracy", op="<", threshold=0.6, windows=2,
              severity="critical", retrain=True),
    AlertRule(name="under-allocation-high", metric="under_rate", op=">", threshold=0.25,
              windows=2, severity="critical", retrain=True),
    AlertRule(name="feature-psi-high", metric="psi", op=">", threshold=0.2, min_samples=50),
    AlertRule(name="class-prior-shift", metric="prior_psi_actual", op=">", threshold=0.2,
              min_samples=50),
)  # fmt: skip


class AlertConfig(BaseModel):
    """Every alerting choice: the rules, where to POST alerts, and the window size."""

    rules: list[AlertRule] = Field(default_factory=lambda: list(DEFAULT_RULES))
    every: str = Field("1D", description="monitoring window (pandas frequency: 1h, 1D …)")
    webhook_url: str | None = None
    webhook_timeout_s: float = Field(5.0, gt=0)


def load_alert_config(path: str | Path | None = None) -> AlertConfig:
    """The defaults, or a TOML file's settings (rules given there replace the defaults)."""
    if path is None:
        return AlertConfig()
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ValueError(f"{path}: cannot read alert config: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML: {exc}") from exc
    try:
        return AlertConfig.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{path}: invalid alert config:\n{exc}") from exc


@dataclass(frozen=True)
class Alert:
    rule: str
    metric: str
    scope: str
    value: float
    threshold: float
    op: str
    windows: int
    window_start: datetime
    severity: str
    retrain: bool

    @property
    def message(self) -> str:
        return (
            f"{self.rule}: {self.metric} of {self.scope} = {self.value:.4g} {self.op} "
            f"{self.threshold:g} for {self.windows} window(s) up to {self.window_start:%Y-%m-%d %H:%M}"
        )

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        out["window_start"] = self.window_start.isoformat()
        out["message"] = self.message
        return out


def evaluate_rules(long: pd.DataFrame, rules: Sequence[AlertRule]) -> list[Alert]:
    """Alerts whose rule holds in the trailing windows of each scope (``MonitorSnapshot.long``)."""
    alerts: list[Alert] = []
    if long.empty:
        return alerts
    for rule in rules:
        rows = long[(long["metric"] == rule.metric) & (long["n"] >= rule.min_samples)]
        if rule.scope != "*":
            rows = rows[rows["scope"] == rule.scope]
        for scope, group in rows.groupby("scope", sort=True):
            trailing = group.sort_values("window_start").tail(rule.windows)
            if len(trailing) < rule.windows:
                continue
            if all(rule.breached(v) for v in trailing["value"]):
                last = trailing.iloc[-1]
                alerts.append(
                    Alert(rule.name, rule.metric, str(scope), float(last["value"]),
                          rule.threshold, rule.op, rule.windows,
                          pd.Timestamp(last["window_start"]).to_pydatetime(), rule.severity,
                          rule.retrain)
                )  # fmt: skip
    return alerts


alerts_metadata = MetaData()

alerts_table = Table(
    ALERTS_TABLE,
    alerts_metadata,
    # Oracle numbers ids only through a sequence (optional: SQLite and PostgreSQL keep theirs)
    Column(
        "id",
        Integer,
        DbSequence("scoutless_alerts_seq", optional=True),
        primary_key=True,
        autoincrement=True,
    ),
    Column("rule", String(64), nullable=False),
    Column("metric", String(32), nullable=False),
    Column("scope", String(128), nullable=False),
    Column("value", Float, nullable=False),
    Column("threshold", Float, nullable=False),
    Column("window_start", DateTime, nullable=False),
    Column("severity", String(16), nullable=False),
    Column("message", Text, nullable=False),
    Column("created_at", DateTime, nullable=False),  # UTC, naive
    UniqueConstraint("rule", "scope", "window_start", name="scoutless_alerts_once"),
)


def create_alerts_table(engine: Engine) -> None:
    alerts_metadata.create_all(engine, tables=[alerts_table])


def record_alerts(engine: Engine, alerts: Sequence[Alert]) -> list[Alert]:
    """Store the alerts not stored before; returns those (the ones that are news)."""
    create_alerts_table(engine)
    if not alerts:
        return []
    t = alerts_table
    now = datetime.now(UTC).replace(tzinfo=None)
    with engine.begin() as conn:
        seen = {
            (r.rule, r.scope, pd.Timestamp(r.window_start))
            for r in conn.execute(select(t.c.rule, t.c.scope, t.c.window_start))
        }
        new = [a for a in alerts if (a.rule, a.scope, pd.Timestamp(a.window_start)) not in seen]
        if new:
            conn.execute(
                t.insert(),
                [
                    {"rule": a.rule, "metric": a.metric, "scope": a.scope, "value": a.value,
                     "threshold": a.threshold, "window_start": a.window_start,
                     "severity": a.severity, "message": a.message, "created_at": now}
                    for a in new
                ],
            )  # fmt: skip
    return new


def read_alerts(engine: Engine) -> pd.DataFrame:
    create_alerts_table(engine)
    with engine.connect() as conn:
        rows = conn.execute(select(alerts_table).order_by(alerts_table.c.id)).fetchall()
    return pd.DataFrame(rows, columns=[c.name for c in alerts_table.columns])


def post_webhook(url: str, alerts: Sequence[Alert], timeout_s: float = 5.0) -> bool:
    """POST ``{"alerts": [...]}`` as JSON; a failure is logged, never raised (alerts are stored)."""
    payload = {"source": "scoutless", "alerts": [a.to_json() for a in alerts]}
    try:
        response = httpx.post(url, content=json.dumps(payload), timeout=timeout_s,
                              headers={"content-type": "application/json"})  # fmt: skip
        response.raise_for_status()
    except httpx.HTTPError as exc:
        logger.error("alert webhook %s failed: %s", url, exc)
        return False
    return True


def fire(engine: Engine, candidates: Sequence[Alert], config: AlertConfig) -> list[Alert]:
    """Record new alerts, log one line each, POST them to the webhook; returns the new ones."""
    new = record_alerts(engine, candidates)
    for alert in new:
        level = logging.ERROR if alert.severity == "critical" else logging.WARNING
        logger.log(level, "ALERT %s", alert.message)
    if new and config.webhook_url:
        post_webhook(config.webhook_url, new, config.webhook_timeout_s)
    return new
