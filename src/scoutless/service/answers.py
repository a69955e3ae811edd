"""A request's answer, assembled from the pipeline's decisions: the response body's tasks
(or the columns layout) and, from the same decisions, the prediction-log rows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from scoutless.allocation.bounds import AnswerBounds
from scoutless.policy_names import ALPHA_POLICIES
from scoutless.service.request_input import Prepared
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import TARGETS


@dataclass(frozen=True)
class BinsView:
    """A target's bins as plain Python values, ready to go into a response."""

    labels: list[str]
    ranges: list[tuple[float | None, float | None]]
    recommended: list[float]
    unit: str
    panda_field: str

    @classmethod
    def of(cls, target: str, bins: TargetBins, bounds: AnswerBounds | None = None) -> BinsView:
        """The view of ``bins``; each class's recommended value within ``bounds`` (what the
        site can allocate)."""

        def finite(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        spec = TARGETS.get(target)
        return cls(
            labels=[str(label) for label in bins.labels],
            ranges=[
                (finite(bins.bounds(c)[0]), finite(bins.bounds(c)[1]))
                for c in range(bins.n_classes)
            ],
            recommended=[
                bounds.clamp_one(target, r) if bounds else float(r) for r in bins.recommended
            ],
            unit=bins.unit or (spec.unit if spec else ""),
            panda_field=spec.panda_field if spec else target,
        )


@dataclass
class Decision:
    """One target's decision for a request's tasks, as plain Python values (not frozen:
    a frozen dataclass sets each field through ``object.__setattr__``, and every request
    makes one per target and request of its group; nothing changes one once made)."""

    view: BinsView
    classes: list[int]
    probabilities: list[list[float]]
    confidence: list[float]
    p_sufficient: list[float]
    #: the task's own allocated values (value and cost policies); None: the class's
    values: list[float] | None = None
    alpha: float | None = None

    def recommended(self, i: int) -> float:
        """The value allocated to task ``i``, in PanDA's unit."""
        return self.values[i] if self.values is not None else self.view.recommended[self.classes[i]]

    def rows(self, lo: int, hi: int) -> Decision:
        """The decision of tasks ``lo`` to ``hi`` (one request of a batch computed together)."""
        return Decision(
            view=self.view, classes=self.classes[lo:hi],
            probabilities=self.probabilities[lo:hi], confidence=self.confidence[lo:hi],
            p_sufficient=self.p_sufficient[lo:hi],
            values=None if self.values is None else self.values[lo:hi], alpha=self.alpha,
        )  # fmt: skip

    def class_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(self.view.labels, 0)
        for c in self.classes:
            counts[self.view.labels[c]] += 1
        return counts


@dataclass
class Outcome:
    """What one request produced: response tasks, log rows, stage timings (ms)."""

    tasks: list[dict[str, Any]]
    log_rows: list[dict[str, Any]]
    class_counts: dict[str, dict[str, int]]
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: the response's fields in the columns layout (``tasks`` is then empty)
    columns: dict[str, Any] | None = None

    def answer_fields(self) -> dict[str, Any]:
        """The response fields that carry the predictions, in the layout asked for."""
        return {"tasks": self.tasks} if self.columns is None else self.columns


def log_rows(
    prepared: Prepared,
    decisions: Mapping[str, Decision],
    *,
    version: str,
    policy: str,
    request_id: str,
    alpha: float | None = None,
) -> list[dict[str, Any]]:
    """Prediction-log rows (``ops.prediction_log``'s columns): one per task, every
    target's decision in its ``predictions``."""
    per_target = [(target, d.view.labels, d) for target, d in decisions.items()]
    rows: list[dict[str, Any]] = []
    for i, task_id in enumerate(prepared.jeditaskids):
        predictions = {}
        for target, labels, d in per_target:
            c = d.classes[i]
            predictions[target] = {
                "class_id": c,
                "class_label": labels[c],
                "recommended_value": d.recommended(i),
                "probabilities": d.probabilities[i],
            }
            if d.values is not None:  # what the realised under-allocation is held to
                predictions[target]["p_sufficient"] = d.p_sufficient[i]
                predictions[target]["alpha"] = d.alpha
        rows.append(
            {
                "request_id": request_id,
                "jeditaskid": task_id,
                "model_version": version,
                "policy": policy,
                "alpha": alpha if policy in ALPHA_POLICIES else None,
                "predictions": orjson.dumps(predictions).decode(),
                "features": prepared.features_json[i],
            }
        )
    return rows


def answer_tasks(
    prepared: Prepared,
    decisions: Mapping[str, Decision],
    policy: str,
    scouting: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The response's ``tasks``: per task, every target's class, range and probabilities."""
    tasks = [
        {"index": i, "jeditaskid": task_id, "targets": {}, "flags": prepared.flags[i]}
        for i, task_id in enumerate(prepared.jeditaskids)
    ]
    for target, d in decisions.items():
        view = d.view
        for i, c in enumerate(d.classes):
            tasks[i]["targets"][target] = {
                "class_id": c,
                "class_label": view.labels[c],
                "bin_range": view.ranges[c],
                "probabilities": d.probabilities[i],
                "recommended_value": d.recommended(i),
                "unit": view.unit,
                "panda_field": view.panda_field,
                "confidence": d.confidence[i],
                "p_sufficient": d.p_sufficient[i],
                "policy": policy,
                "alpha": d.alpha,
            }
    for task, scout in zip(tasks, scouting or [], strict=False):
        task["scout"] = scout
    return tasks


def answer_columns(
    prepared: Prepared,
    decisions: Mapping[str, Decision],
    policy: str,
    scouting: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The response's fields in the columns layout: per target, the classes described
    once and one list per field over the tasks. No object per task and target: a large
    batch serialises a few long lists instead of an object per task, in fewer bytes."""
    targets = {}
    for target, d in decisions.items():
        view = d.view
        targets[target] = {
            "class_labels": view.labels,
            "bin_ranges": view.ranges,
            "recommended_values": view.recommended,
            "unit": view.unit,
            "panda_field": view.panda_field,
            "policy": policy,
            "class_id": d.classes,
            "recommended_value": [d.recommended(i) for i in range(len(d.classes))],
            "confidence": d.confidence,
            "p_sufficient": d.p_sufficient,
            "probabilities": d.probabilities,
            "alpha": d.alpha,
        }
    columns = {
        "layout": "columns",
        "jeditaskids": prepared.jeditaskids,
        "flags": prepared.flags,
        "targets": targets,
    }
    if scouting is not None:
        columns["scout"] = scouting
    return columns
