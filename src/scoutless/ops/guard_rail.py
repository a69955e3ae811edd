"""The guard rail: a canary that harms production goes back to shadow by itself.

The rule (``Settings.rollout``): once both arms have ``guard_min_tasks`` tasks with the
figure, the canary's ``guard_figure`` worse than the control's by more than
``guard_margin`` *and* a bootstrap interval of the difference that excludes zero trips it.
Worse is lower for success rates, higher for kills, retries, waste and waits. Tripping
appends ``shadow`` to the rollout (the listener follows from its next batch, the JEDI
plugin refuses skips from then on), stores and logs an alert naming the figure, the arm
and the interval, POSTs it to the webhook, and sets ``scoutless_rollout_guard_tripped``.
Promotion from canary to full is never the rail's: it only says the evidence holds
(:func:`promotion_evidence`, which ``rollout set full`` asks for).

The rail never overrides a newer decision: it writes shadow only over the very canary it
judged (a compare-and-swap on the rollout's version); when a person changed the rollout
between its reading and its writing, it re-reads, leaves the newer decision in force and
says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry, Gauge
from sqlalchemy import Engine

from scoutless.config import RolloutSettings
from scoutless.ops.alerts import Alert, AlertConfig, fire
from scoutless.ops.impact import FIGURES, HIGHER_IS_BETTER, Difference, ImpactReport
from scoutless.ops.rollout import RolloutConflict, read_rollout, set_rollout

logger = logging.getLogger("scoutless.rollout")
RULE = "rollout-guard"


@dataclass(frozen=True)
class GuardAlert(Alert):
    """An alert whose message carries the difference's interval and the arms."""

    detail: str = ""

    @property
    def message(self) -> str:
        return f"{self.rule}: {self.detail}; rollout moved back to shadow"


@dataclass(frozen=True)
class Verdict:
    tripped: bool
    message: str
    difference: Difference | None = None


def harmful(d: Difference, margin: float) -> bool:
    """Worse by more than the margin, with an interval that excludes zero."""
    if d.figure in HIGHER_IS_BETTER:
        return d.value < -margin and d.hi < 0
    return d.value > margin and d.lo > 0


def judge(report: ImpactReport, s: RolloutSettings) -> Verdict:
    """What the rule says of the report (no side effect)."""
    if s.guard_figure not in FIGURES:
        raise ValueError(f"rollout.guard_figure: {s.guard_figure!r} is not one of {FIGURES}")
    d = report.difference(s.guard_figure)
    if d is None or min(d.n_arm, d.n_baseline) < s.guard_min_tasks:
        have = "no tasks" if d is None else f"{d.n_arm}/{d.n_baseline} tasks"
        return Verdict(False, f"waiting: {have}, {s.guard_min_tasks} per arm needed", d)
    if harmful(d, s.guard_margin):
        return Verdict(True, f"{d.describe()}, beyond the margin {s.guard_margin:g}", d)
    return Verdict(False, f"holds: {d.describe()}; promotion to full is a person's decision", d)


class GuardGauges:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.tripped = Gauge(
            "scoutless_rollout_guard_tripped", "1 after the guard rail moved the rollout to shadow",
            registry=self.registry,
        )  # fmt: skip


def check_guard_rail(
    engine: Engine, report: ImpactReport, *, config: AlertConfig | None = None,
    settings: RolloutSettings, gauges: GuardGauges | None = None,
) -> Verdict:  # fmt: skip
    """Apply the rule to a canary in force; trip: back to shadow, alert, webhook, metric."""
    s = settings
    state = read_rollout(engine)
    if state.mode != "canary":
        return Verdict(False, f"rollout is {state.mode}: nothing to guard")
    verdict = judge(report, s)
    if not verdict.tripped or verdict.difference is None:
        return verdict
    d = verdict.difference
    try:
        set_rollout(engine, "shadow", seed=state.seed, reason=f"guard rail: {verdict.message}",
                    changed_by="guard-rail", expected_version=state.version)  # fmt: skip
    except RolloutConflict as exc:
        newer = exc.current
        message = (
            f"{verdict.message}, judged on version {state.version} ({state.describe()}); "
            f"the rollout changed since (version {newer.version}: {newer.describe()} by "
            f"{newer.changed_by}): the newer decision stands, not overridden"
        )
        logger.warning("guard rail: %s", message)
        return Verdict(False, message, d)
    now = datetime.now(UTC).replace(tzinfo=None)
    worse_is_lower = d.figure in HIGHER_IS_BETTER
    alert = GuardAlert(
        RULE, d.figure, f"{d.arm}-vs-{d.baseline}", d.value,
        -s.guard_margin if worse_is_lower else s.guard_margin, "<" if worse_is_lower else ">",
        1, now, "critical", False, detail=verdict.message,
    )  # fmt: skip
    fire(engine, [alert], config or AlertConfig())
    logger.error("guard rail tripped: %s; rollout moved to shadow", verdict.message)
    if gauges is not None:
        gauges.tripped.set(1)
    return verdict


def promotion_evidence(engine: Engine, settings: RolloutSettings) -> Verdict:
    """Whether the impact evidence of the last ``evidence_days`` lets the rollout go to
    full: the guard figure measured on ``guard_min_tasks`` tasks per arm, and no harm.
    ``tripped`` is True when the evidence holds (a person may promote)."""
    from scoutless.ops.impact import ImpactError, impact_report

    s = settings
    since = datetime.now(UTC).replace(tzinfo=None) - timedelta(days=s.evidence_days)
    try:
        report = impact_report(engine, since=since, settings=s)
    except ImpactError as exc:
        return Verdict(False, f"no impact evidence in the last {s.evidence_days:g} days: {exc}")
    d = report.difference(s.guard_figure)
    window = f"in the last {s.evidence_days:g} days"
    if d is None or min(d.n_arm, d.n_baseline) < s.guard_min_tasks:
        have = "no tasks" if d is None else f"{d.n_arm}/{d.n_baseline} tasks"
        need = f"{s.guard_min_tasks} per arm needed"
        return Verdict(False, f"not enough evidence {window}: {have}, {need}", d)
    if harmful(d, s.guard_margin):
        return Verdict(False, f"the evidence {window} says harm: {d.describe()}", d)
    return Verdict(True, f"evidence {window} holds: {d.describe()}", d)


class ImpactWatch:
    """What the monitor loop keeps between steps for the impact: its gauges (on the loop's
    registry), the window and the rollout's settings (the figures' bootstrap, the rule)."""

    def __init__(
        self, settings: RolloutSettings, registry: CollectorRegistry | None = None,
        every: str = "1D",
    ) -> None:  # fmt: skip
        from scoutless.ops.impact import ImpactGauges

        self.impact = ImpactGauges(registry)
        self.guard = GuardGauges(self.impact.registry)
        self.every, self.settings = every, settings

    def step(self, engine: Engine, ops_engine: Engine, config: AlertConfig) -> Verdict:
        """Collect newly finished jobs, recompute the figures, apply the guard rail."""
        from scoutless.ops.impact import impact_report
        from scoutless.ops.impact_store import ImpactError, collect_impact

        collect_impact(engine, ops_engine)
        try:
            report = impact_report(ops_engine, every=self.every, settings=self.settings)
        except ImpactError as exc:
            return Verdict(False, str(exc))
        self.impact.update(report)
        verdict = check_guard_rail(
            ops_engine, report, config=config, settings=self.settings, gauges=self.guard
        )
        logger.info("guard rail: %s", verdict.message)
        return verdict
