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
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from scoutless.jedi.units import Resources, resources
from scoutless.policy_names import VALUE_POLICIES

TASK_STATUS = "task_status"
SCOUT_PREDICTION = "scout_prediction"
#: the targets a prediction must hold to fill JEDI's resource columns
RESOURCE_TARGETS = ("memory", "cputime", "io", "walltime")
#: an open-ended top class of these has no upper bound to allocate: scouts must run
BOUNDED_TARGETS = ("memory", "cputime")
#: ids and counts are stored in PanDA's NUMBER / BIGINT columns: int64 at most
INT64_MAX = 2**63 - 1
#: jedi_tasks' resource columns (ramcount, cputime, walltime, iointensity) are PostgreSQL
#: ``integer`` in PanDA's DDL
INT32_MAX = 2**31 - 1
#: a message's timestamp may run this far ahead of our clock (seconds), no further
MAX_CLOCK_SKEW_S = 300.0
#: outbox and log columns: model_version String(128), policy String(32)
MAX_VERSION_CHARS = 128
MAX_POLICY_CHARS = 32


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
    except (TypeError, ValueError, RecursionError) as exc:
        raise MalformedMessage(f"not JSON: {str(exc)[:200]}") from None
    if not isinstance(decoded, dict):
        raise MalformedMessage(f"expected a JSON object, got {type(decoded).__name__}")
    return decoded


def _int_field(msg: Mapping[str, Any], key: str, lo: int = 0, hi: int = INT64_MAX) -> int:
    """An integer in [lo, hi] (int64 by default: what PanDA's columns hold)."""
    value = msg.get(key)
    if isinstance(value, bool) or not isinstance(value, int | str) or len(str(value)) > 40:
        raise MalformedMessage(f"{key}: expected an integer, got {_short(value)}")
    try:
        number = int(value)
    except ValueError:
        raise MalformedMessage(f"{key}: expected an integer, got {_short(value)}") from None
    if not lo <= number <= hi:
        raise MalformedMessage(f"{key}: {number} is outside [{lo}, {hi}]")
    return number


def _number_field(msg: Mapping[str, Any], key: str) -> float:
    value = msg.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise MalformedMessage(f"{key}: expected a number, got {_short(value)}")
    return float(value)


def _timestamp_field(
    msg: Mapping[str, Any], key: str, now: float | None, max_skew_s: float
) -> float:
    """Seconds since the epoch, not negative and at most ``max_skew_s`` ahead of ``now``."""
    value = _number_field(msg, key)
    now = time.time() if now is None else now
    if value < 0 or value > now + max_skew_s:
        raise MalformedMessage(
            f"{key}: {value:g} is not a time between the epoch and {max_skew_s:g} s from now"
        )
    return value


def _short_str(msg: Mapping[str, Any], key: str, limit: int) -> str:
    value = str(msg.get(key) or "")
    if len(value) > limit:
        raise MalformedMessage(f"{key}: {len(value)} characters, at most {limit}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def message_type(body: str | bytes | Mapping[str, Any]) -> str | None:
    """The ``msg_type`` of a JSON body (None if it has none); raises on non-JSON."""
    value = _decode(body).get("msg_type")
    return value if isinstance(value, str) else None


def parse_task_status(
    body: str | bytes | Mapping[str, Any],
    *,
    now: float | None = None,
    max_skew_s: float = MAX_CLOCK_SKEW_S,
) -> TaskStatus:
    """A task_status with its id within int64 (≥ 1) and its timestamp no further than
    ``max_skew_s`` ahead of ``now`` (default: this machine's clock)."""
    msg = _decode(body)
    if msg.get("msg_type") != TASK_STATUS:
        raise MalformedMessage(f"msg_type: expected {TASK_STATUS!r}, got {msg.get('msg_type')!r}")
    status = msg.get("status")
    if not isinstance(status, str) or not status:
        raise MalformedMessage(f"status: expected a task status, got {_short(status)}")
    return TaskStatus(
        _int_field(msg, "taskid", lo=1),
        status[:64],
        _timestamp_field(msg, "timestamp", now, max_skew_s),
    )


JOB_STATUS = "job_status"


@dataclass(frozen=True)
class JobStatus:
    job_id: int
    task_id: int | None
    status: str
    timestamp: float


def parse_job_status(
    body: str | bytes | Mapping[str, Any],
    *,
    now: float | None = None,
    max_skew_s: float = MAX_CLOCK_SKEW_S,
) -> JobStatus:
    """A job_status as panda-server's ``DBProxy.push_job_status_message`` sends it (for jobs
    whose specialHandling holds ``pc``, a task with the ``pushStatusChanges`` split rule)::

        {"msg_type": "job_status", "jobid": 4674379299, "taskid": 123, "status": "failed",
         "timestamp": 1767225600, "computingsite": "…", "inputs": […],
         "piloterrorcode": 1235, "exeerrorcode": 0, …}

    It carries no maxPSS and no wall time: the job's row holds them."""
    msg = _decode(body)
    if msg.get("msg_type") != JOB_STATUS:
        raise MalformedMessage(f"msg_type: expected {JOB_STATUS!r}, got {msg.get('msg_type')!r}")
    status = msg.get("status")
    if not isinstance(status, str) or not status or len(status) > 64:
        raise MalformedMessage(f"status: expected a job status, got {_short(status)}")
    task = None if msg.get("taskid") is None else _int_field(msg, "taskid", lo=1)
    return JobStatus(
        _int_field(msg, "jobid", lo=1),
        task,
        status,
        _timestamp_field(msg, "timestamp", now, max_skew_s),
    )


@dataclass(frozen=True)
class ScoutPrediction:
    task_id: int
    model_version: str
    resources: Resources
    confidence: dict[str, float]
    policy: str
    skip_scout: bool
    timestamp: float
    #: the rollout arm the task was put in (shadow, canary, control, full …); None: no rollout
    arm: str | None = None

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
        } | ({} if self.arm is None else {"arm": self.arm})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))


_RESOURCE_KEYS = {
    "ramCount": ("ram_count", int), "ramUnit": ("ram_unit", str),
    "cpuTime": ("cpu_time", int), "cpuTimeUnit": ("cpu_time_unit", str),
    "ioIntensity": ("io_intensity", int), "ioIntensityUnit": ("io_intensity_unit", str),
    "walltime": ("walltime", int),
}  # fmt: skip


def parse_scout_prediction(
    body: str | bytes | Mapping[str, Any],
    *,
    now: float | None = None,
    max_skew_s: float = MAX_CLOCK_SKEW_S,
) -> ScoutPrediction:
    """A scout_prediction whose ids and values fit PanDA's columns, confidences in [0, 1]."""
    msg = _decode(body)
    if msg.get("msg_type") != SCOUT_PREDICTION:
        raise MalformedMessage(
            f"msg_type: expected {SCOUT_PREDICTION!r}, got {msg.get('msg_type')!r}"
        )
    fields: dict[str, Any] = {}
    for key, (attr, kind) in _RESOURCE_KEYS.items():
        value = msg.get(key)
        if kind is int:
            value = _int_field(msg, key, hi=INT32_MAX)
        elif not isinstance(value, str) or not value or len(value) > 32:
            raise MalformedMessage(f"{key}: expected a unit, got {_short(value)}")
        fields[attr] = value
    return ScoutPrediction(
        task_id=_int_field(msg, "task_id", lo=1),
        model_version=_short_str(msg, "model_version", MAX_VERSION_CHARS),
        resources=Resources(**fields),
        confidence=_confidence(msg.get("confidence")),
        policy=_short_str(msg, "policy", MAX_POLICY_CHARS),
        skip_scout=msg.get("skip_scout") is True,
        timestamp=_timestamp_field(msg, "timestamp", now, max_skew_s),
        arm=msg["arm"] if isinstance(msg.get("arm"), str) else None,
    )


def _confidence(value: Any) -> dict[str, float]:
    """Target → probability in [0, 1], for the targets a prediction names."""
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > len(RESOURCE_TARGETS) * 2:
        raise MalformedMessage(f"confidence: expected an object per target, got {_short(value)}")
    out = {}
    for key in value:
        number = _number_field(value, key)
        if not 0 <= number <= 1:
            raise MalformedMessage(f"confidence.{str(key)[:32]}: {number:g} is not in [0, 1]")
        out[str(key)[:32]] = number
    return out


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


def eligible_to_skip(task: Mapping[str, Any], policy: str, skip_policies: Collection[str]) -> bool:
    """Whether the allocation lets a task (the service's answer for it) skip its scouts:
    the cost policy's per-task decision where it gives one (``scout``), else the rule above.
    The rollout then decides whether an eligible task does (ops/rollout.py)."""
    return should_skip_scouts(task["targets"], policy, skip_policies, task.get("scout"))


def build_prediction(
    task_id: int,
    model_version: str,
    targets: Mapping[str, Mapping[str, Any]],
    *,
    policy: str,
    skip_policies: Collection[str],
    timestamp: float,
    scout: Mapping[str, Any] | None = None,
    skip_scout: bool | None = None,
    arm: str | None = None,
) -> ScoutPrediction:
    """A scout_prediction from one task's predicted targets (the service's response shape);
    ``scout``: the task's scout decision under the cost policy; ``skip_scout`` given: the
    rollout's decision (ops/rollout.py) instead of the eligibility rule alone."""
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
        skip_scout=(
            should_skip_scouts(targets, policy, skip_policies, scout)
            if skip_scout is None
            else skip_scout
        ),
        timestamp=timestamp,
        arm=arm,
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
    skip_scout: bool | None = None,
) -> dict[str, Any]:
    """Task parameters with the predicted resources and, when the prediction is safe enough
    (and the rollout lets it: ``skip_scout``), ``skipScout`` — what a submitter passes to
    panda-client. A submitter's ``…Fixed`` unit (and its value) is kept, as JEDI keeps it."""
    prediction = build_prediction(
        int(params.get("jediTaskID") or 0), model_version, targets,
        policy=policy, skip_policies=skip_policies, timestamp=timestamp, scout=scout,
        skip_scout=skip_scout,
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
