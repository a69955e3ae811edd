"""What the listener sends for a batch's tasks: their submission-time features read from
the history, the bundle's prediction, the rollout arm each task falls in and the refitted
calibration's factors; the prediction-log and outbox rows committed together.

The listener (``panda/listener.py``) keeps the delivery: triage, retries, dead letters, acks.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd
from sqlalchemy import Engine

from scoutless.allocation.arms import MODES, SCOPE_KEYS, Assignment, RolloutState, assign
from scoutless.config import ListenerSettings
from scoutless.features.domains import violations
from scoutless.history.panda_db import read_history
from scoutless.history.task_reader import TaskReader
from scoutless.jedi.messages import (
    build_prediction,
    eligible_to_skip,
)
from scoutless.ops.prediction_log import DATABASE
from scoutless.ops.promise import Recalibration, apply_factors
from scoutless.ops.rollout import already_skipped, create_rollout_table, read_rollout
from scoutless.panda import outbox
from scoutless.panda.broker import Frame
from scoutless.panda.telemetry import ListenerMetrics
from scoutless.policy_names import ALPHA_POLICIES
from scoutless.service.pipeline import Pipeline

log = logging.getLogger("scoutless.panda.listener")
#: the caller the listener's prediction-log rows name
LISTENER = "listener"


@dataclass
class Batch:
    """Frames of one batch: those already handled, and the tasks still to predict."""

    done: list[Frame] = field(default_factory=list)
    tasks: dict[int, list[Frame]] = field(default_factory=lambda: defaultdict(list))
    received: dict[int, float] = field(default_factory=dict)  # task → JEDI's timestamp
    #: frames that cannot be processed, with why: dead letters at once
    malformed: list[tuple[Frame, str]] = field(default_factory=list)
    #: frames whose processing failed this time (retried, or dead letters after N)
    failed: dict[int, str] = field(default_factory=dict)  # task → why

    def subset(self, task_ids: Sequence[int]) -> Batch:
        """The same batch restricted to some tasks (for the one-task-at-a-time retry)."""
        part = Batch()
        part.tasks.update({t: self.tasks[t] for t in task_ids})
        part.received.update({t: self.received[t] for t in task_ids})
        return part


class TaskPredictor:
    """The listener's prediction step, per batch of tasks."""

    def __init__(
        self,
        pipeline: Pipeline,
        engine: Engine,
        settings: ListenerSettings,
        metrics: ListenerMetrics,
        calibration: Callable[[], Recalibration | None] | None = None,
    ) -> None:
        """``calibration``: the refitted calibration in force (ops/promise.py), read per
        batch; its factors scale the values sent and logged."""
        self.pipeline = pipeline
        self.calibration = calibration
        self.engine = engine
        self.settings = settings
        self.metrics = metrics
        from scoutless.ops.prediction_log import PredictionLog

        PredictionLog(engine)  # creates scoutless_task_predictions where missing
        create_rollout_table(engine)
        self.rollout: RolloutState | None = None
        # history features from the store, as GET /v1/tasks/{id}/prediction computes them
        self._history = TaskReader(engine).history_lookup(
            pipeline.history, pipeline.history_settings
        )

    def current_rollout(self) -> RolloutState:
        """The rollout row, re-read for every batch: a switch (a person, the guard rail)
        holds from the next batch on, without a restart."""
        state = read_rollout(self.engine)
        if self.rollout is None or state.version != self.rollout.version:
            before = self.rollout.describe() if self.rollout else "-"
            kept = already_skipped(self.engine)
            log.warning(
                "rollout %s -> %s (by %s: %s); %d tasks already skipped their scouts and stay so%s",
                before, state.describe(), state.changed_by, state.reason or "no reason given",
                len(kept), f": {kept[-20:]}" if kept else "",
            )  # fmt: skip
            for mode in MODES:
                self.metrics.mode.labels(mode).set(1 if mode == state.mode else 0)
            self.rollout = state
        return state

    def predict(self, task_ids: list[int], batch: Batch) -> dict[int, str]:
        """scout_prediction JSON per task that exists; unknown tasks are logged and done."""
        if not task_ids:
            return {}
        history = read_history(self.engine, task_ids, with_jobs=False)
        features = history.features()
        if self._history is not None:  # the task's creation is its history's submit time
            created = history.tasks.set_index("jeditaskid")["creationdate"]
            features = features.assign(creationdate=created.reindex(features.index).astype(str))
        for tid in sorted(set(task_ids) - set(features.index.astype(int))):
            log.warning("task %s is not in jedi_tasks; no prediction", tid)
            self.metrics.count("unknown_task")
            batch.done.extend(batch.tasks.pop(tid))
        features = self._refuse_out_of_domain(features, batch)
        rows = [dict(r, jeditaskid=int(tid)) for tid, r in features.iterrows()]
        if not rows:
            return {}
        s = self.settings
        state = self.current_rollout()
        result = self.pipeline.run(
            rows, policy=s.policy, alpha=s.alpha, request_id=f"listen-{uuid.uuid4().hex}",
            history=self._history,
        )  # fmt: skip
        attrs = history.tasks.set_index("jeditaskid").reindex(columns=list(SCOPE_KEYS))
        recal = self.calibration() if self.calibration is not None else None
        now = time.time()
        messages: dict[int, str] = {}
        arms: dict[int, Assignment] = {}
        for task in result.tasks:
            tid = int(task["jeditaskid"])
            eligible = eligible_to_skip(task, s.policy, s.skip_scout_policies)
            scope = attrs.loc[tid].to_dict() if tid in attrs.index else {}
            task["targets"] = apply_factors(task["targets"], recal, scope)
            arms[tid] = arm = assign(state, str(tid), eligible, scope)
            log.info(
                "task %s: arm %s, skip_scout %s (%s)", tid, arm.arm, arm.skip_scout, arm.reason
            )
            self.metrics.arms.labels(arm.arm).inc()
            prediction = build_prediction(
                tid, self.pipeline.version, task["targets"], policy=s.policy,
                skip_policies=s.skip_scout_policies, timestamp=now, skip_scout=arm.skip_scout,
                arm=arm.arm,
            )  # fmt: skip
            messages[prediction.task_id] = prediction.to_json()
        targets = {int(t["jeditaskid"]): t["targets"] for t in result.tasks}
        alpha = s.alpha if s.policy in ALPHA_POLICIES else None
        log_rows = [_with_arm(r, arms, alpha, targets) for r in result.log_rows]
        outbox.record(self.engine, log_rows, messages, self.pipeline.version)
        return messages


    def _refuse_out_of_domain(self, features: pd.DataFrame, batch: Batch) -> pd.DataFrame:
        """The tasks whose numbers are inside their fields' domains (``features.domains``);
        the others are dead letters at once, with the task and the column: no prediction
        is published for them (JEDI runs their scouts), and retrying cannot mend them."""
        table = self.pipeline.domains
        numbers = {c: features[c].to_numpy(dtype=float) for c in features if c in table}
        refused: dict[int, str] = {}
        for v in violations(numbers, table):
            tid = int(features.index[v.row])
            refused.setdefault(tid, f"task {tid}: {v.domain.source}: {v.message()}")
        for tid, why in refused.items():
            log.warning("%s; no prediction", why)
            self.metrics.count("out_of_domain")
            batch.malformed += [(frame, why) for frame in batch.tasks.pop(tid, [])]
        return features.drop(index=[i for i in features.index if int(i) in refused])


def _with_arm(
    row: dict, arms: dict[int, Assignment], alpha: float | None, targets: dict[int, dict]
) -> dict:
    """A prediction-log row with the risk bound, the rollout arm (and why) and the values
    as sent (a calibration's factors applied)."""
    tid = int(row["jeditaskid"]) if row.get("jeditaskid") is not None else None
    extra: dict = {"source": DATABASE, "caller": LISTENER}  # the task as read from PanDA
    if alpha is not None:
        extra["alpha"] = alpha
    if tid in arms:
        extra |= {"arm": arms[tid].arm, "arm_reason": arms[tid].reason}
    sent = targets.get(tid) if tid is not None else None
    if sent and any("calibration" in entry for entry in sent.values()):
        logged = (
            json.loads(row["predictions"])
            if isinstance(row["predictions"], str)
            else row["predictions"]
        )
        for name, entry in logged.items():
            if name in sent:
                entry["recommended_value"] = sent[name]["recommended_value"]
        extra["predictions"] = json.dumps(logged)
    return {**row, **extra}
