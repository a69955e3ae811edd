"""The two messages on the broker, parsed and built in one place.

In (JEDI → scoutless, ``/queue/jedi_jobtaskstatus``, JEDI's ``push_task_status_message``)::

    {"msg_type": "task_status", "taskid": 123, "status": "defined", "timestamp": 1767225600}

Out (scoutless → JEDI's message processor)::

    {"msg_type": "scout_prediction", "task_id": 123, "model_version": "…",
     "ramCount": 2000, "ramUnit": "MBPerCore", "cpuTime": 85, "cpuTimeUnit": "HS06sPerEvent",
     "ioIntensity": 500, "ioIntensityUnit": "kBPerS", "walltime": 14400,
     "confidence": {"memory": 0.93, …}, "policy": "risk", "skip_scout": true,
     "timestamp": 1767225601.2}
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from scoutless.jedi.units import Resources, resources

TASK_STATUS = "task_status"
SCOUT_PREDICTION = "scout_prediction"
#: the targets a prediction must hold to fill JEDI's resource columns
RESOURCE_TARGETS = ("memory", "cputime", "io", "walltime")
#: an open-ended top class of these has no upper bound to allocate: scouts must run
BOUNDED_TARGETS = ("memory", "cputime")


class MalformedMessage(ValueError):
    """A message body that is not what its format says (names the field)."""


@dataclass(frozen=True)
class TaskStatus:
    task_id: int
    status: str
    timestamp: float


def _decode(body: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(body, Mapping):
        return dict(body)
    try:
        decoded = json.loads(body)
    except (TypeError, ValueError) as exc:
        raise MalformedMessage(f"not JSON: {exc}") from None
    if not isinstance(decoded, dict):
        raise MalformedMessage(f"expected a JSON object, got {type(decoded).__name__}")
    return decoded


def _int_field(msg: Mapping[str, Any], key: str) -> int:
    value = msg.get(key)
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise MalformedMessage(f"{key}: expected an integer, got {value!r}")
    try:
        return int(value)
    except ValueError:
        raise MalformedMessage(f"{key}: expected an integer, got {value!r}") from None


def _number_field(msg: Mapping[str, Any], key: str) -> float:
    value = msg.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise MalformedMessage(f"{key}: expected a number, got {value!r}")
    return float(value)


def message_type(body: str | bytes | Mapping[str, Any]) -> str | None:
    """The ``msg_type`` of a JSON body (None if it has none); raises on non-JSON."""
    value = _decode(body).get("msg_type")
    return value if isinstance(value, str) else None


def parse_task_status(body: str | bytes | Mapping[str, Any]) -> TaskStatus:
    msg = _decode(body)
    if msg.get("msg_type") != TASK_STATUS:
        raise MalformedMessage(f"msg_type: expected {TASK_STATUS!r}, got {msg.get('msg_type')!r}")
    status = msg.get("status")
    if not isinstance(status, str) or not status:
        raise MalformedMessage(f"status: expected a task status, got {status!r}")
    return TaskStatus(_int_field(msg, "taskid"), status, _number_field(msg, "timestamp"))


@dataclass(frozen=True)
class ScoutPrediction:
    task_id: int
    model_version: str
    resources: Resources
    confidence: dict[str, float]
    policy: str
    skip_scout: bool
    timestamp: float

    def to_dict(self) -> dict[str, Any]:
        r = self.resources
        return {
            "msg_type": SCOUT_PREDICTION,
            "task_id": self.task_id,
            "model_version": self.model_version,
            "ramCount": r.ram_count,
            "ramUnit": r.ram_unit,
            "cpuTime": r.cpu_time,
            "cpuTimeUnit": r.cpu_time_unit,
            "ioIntensity": r.io_intensity,
            "ioIntensityUnit": r.io_intensity_unit,
            "walltime": r.walltime,
            "confidence": dict(self.confidence),
            "policy": self.policy,
            "skip_scout": self.skip_scout,
            "timestamp": self.timestamp,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))


_RESOURCE_KEYS = {
    "ramCount": ("ram_count", int), "ramUnit": ("ram_unit", str),
    "cpuTime": ("cpu_time", int), "cpuTimeUnit": ("cpu_time_unit", str),
    "ioIntensity": ("io_intensity", int), "ioIntensityUnit": ("io_intensity_unit", str),
    "walltime": ("walltime", int),
}  # fmt: skip


def parse_scout_prediction(body: str | bytes | Mapping[str, Any]) -> ScoutPrediction:
    msg = _decode(body)
    if msg.get("msg_type") != SCOUT_PREDICTION:
        raise MalformedMessage(
            f"msg_type: expected {SCOUT_PREDICTION!r}, got {msg.get('msg_type')!r}"
        )
    fields: dict[str, Any] = {}
    for key, (attr, kind) in _RESOURCE_KEYS.items():
        value = msg.get(key)
        if kind is int:
            value = _int_field(msg, key)
            if value < 0:
                raise MalformedMessage(f"{key}: must not be negative, got {value}")
        elif not isinstance(value, str) or not value:
            raise MalformedMessage(f"{key}: expected a unit, got {value!r}")
        fields[attr] = value
    confidence = msg.get("confidence") or {}
    if not isinstance(confidence, dict):
        raise MalformedMessage(f"confidence: expected an object, got {confidence!r}")
    return ScoutPrediction(
        task_id=_int_field(msg, "task_id"),
        model_version=str(msg.get("model_version") or ""),
        resources=Resources(**fields),
        confidence={str(k): float(v) for k, v in confidence.items()},
        policy=str(msg.get("policy") or ""),
        skip_scout=msg.get("skip_scout") is True,
        timestamp=_number_field(msg, "timestamp"),
    )


#: policies that allocate each task its own value (a number, not a class's edge)
VALUE_POLICIES: tuple[str, ...] = ("value", "cost")


def should_skip_scouts(
    targets: Mapping[str, Mapping[str, Any]],
    policy: str,
    skip_policies: Collection[str],
    scout: Mapping[str, Any] | None = None,
) -> bool:
    """Scouts may be skipped when the policy bounds the risk of under-allocating and every
    bounded target's chosen class has an upper edge (an open top class cannot be sized); a
    value policy sizes every task by its own value; the cost policy's per-task ``scout``
    decision (scouting cheaper than predicting) keeps the scouts."""
    if policy not in skip_policies or any(t not in targets for t in RESOURCE_TARGETS):
        return False
    if scout is not None:
        return not scout["scout"]
    if policy in VALUE_POLICIES:
        return True
    return all(targets[t]["bin_range"][1] is not None for t in BOUNDED_TARGETS)


def build_prediction(
    task_id: int,
    model_version: str,
    targets: Mapping[str, Mapping[str, Any]],
    *,
    policy: str,
    skip_policies: Collection[str],
    timestamp: float,
    scout: Mapping[str, Any] | None = None,
) -> ScoutPrediction:
    """A scout_prediction from one task's predicted targets (the service's response shape);
    ``scout``: the task's scout decision under the cost policy."""
    missing = [t for t in RESOURCE_TARGETS if t not in targets]
    if missing:
        raise ValueError(f"task {task_id}: prediction lacks targets {missing}")
    value = {t: float(targets[t]["recommended_value"]) for t in RESOURCE_TARGETS}
    return ScoutPrediction(
        task_id=task_id,
        model_version=model_version,
        resources=resources(value["memory"], value["cputime"], value["io"], value["walltime"]),
        confidence={t: float(targets[t]["confidence"]) for t in RESOURCE_TARGETS},
        policy=policy,
        skip_scout=should_skip_scouts(targets, policy, skip_policies, scout),
        timestamp=timestamp,
    )


def resource_taskparams(prediction: ScoutPrediction) -> dict[str, Any]:
    """The task-parameter keys a submitter passes to panda-client (JEDI's refiner reads
    ``ramCount``/``ramUnit``, ``cpuTime``/``cpuTimeUnit``, ``ioIntensity``/…Unit)."""
    keys = ("ramCount", "ramUnit", "cpuTime", "cpuTimeUnit", "ioIntensity", "ioIntensityUnit")
    return {k: v for k, v in prediction.to_dict().items() if k in keys}


def fill_taskparams(
    params: Mapping[str, Any],
    targets: Mapping[str, Mapping[str, Any]],
    model_version: str,
    policy: str,
    skip_policies: Collection[str],
    timestamp: float,
    scout: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Task parameters with the predicted resources and, when the prediction is safe enough,
    ``skipScout`` — what a submitter passes to panda-client. A submitter's ``…Fixed`` unit
    (and its value) is kept, as JEDI keeps it."""
    prediction = build_prediction(
        int(params.get("jediTaskID") or 0), model_version, targets,
        policy=policy, skip_policies=skip_policies, timestamp=timestamp, scout=scout,
    )  # fmt: skip
    filled = dict(params)
    unit_of = {"ramCount": "ramUnit", "cpuTime": "cpuTimeUnit", "ioIntensity": "ioIntensityUnit"}
    for key, value in resource_taskparams(prediction).items():
        unit = params.get(unit_of.get(key, key)) or (
            params.get("ramCountUnit") if key.startswith("ram") else None
        )
        if not str(unit or "").endswith("Fixed"):
            filled[key] = value
    if prediction.skip_scout:
        filled["skipScout"] = True
    return filled
