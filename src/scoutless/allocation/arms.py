"""A task's rollout arm: which eligible tasks skip their scouts, as a pure function.

The state (mode, canary share, seed, scope) and :func:`assign` live here, below the replay
and the operations, so the replay's ``canary`` strategy puts a task in the very arm the
listener would (``ops/rollout.py`` keeps the state in the database and re-exports these).
A task's arm is a pure function of (seed, its stable key): ``jediTaskID``, or the task
name for task parameters before submission — the same on a restart and in any message
order.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

MODES = ("shadow", "canary", "full")
#: the task attributes a canary may be scoped by (jedi_tasks' names)
SCOPE_KEYS = ("gshare", "workqueue_id", "processingtype")
#: arms a task can be in; only ``canary`` and ``full`` skip scouts
ARMS = ("shadow", "canary", "control", "full", "ineligible", "out_of_scope")
SKIPPING_ARMS = frozenset({"canary", "full"})


class RolloutError(ValueError):
    """A rollout setting that cannot hold (names the key)."""


@dataclass(frozen=True)
class RolloutState:
    mode: str
    share: float | None = None
    seed: int = 0
    scope: dict[str, list[str]] = field(default_factory=dict)
    reason: str = ""
    changed_by: str = "default"
    changed_at: datetime | None = None
    version: int = 0  # the row's id; 0: no row yet (the configured default)

    def __post_init__(self) -> None:
        check_state(self.mode, self.share, self.scope)

    def describe(self) -> str:
        text = self.mode
        if self.mode == "canary":
            text += f" share {self.share:g} seed {self.seed}"
        if self.scope:
            text += " scope " + ", ".join(f"{k}={'|'.join(v)}" for k, v in self.scope.items())
        return text


def check_state(mode: str, share: float | None, scope: Mapping[str, Any]) -> None:
    """Raise :class:`RolloutError` naming the key that is wrong."""
    if mode not in MODES:
        raise RolloutError(f"rollout.mode: unknown mode {mode!r}; expected one of {list(MODES)}")
    if mode == "canary":
        if share is None or not math.isfinite(share) or not 0 < share <= 1:
            raise RolloutError(f"rollout.share: must be in (0, 1], got {share!r}")
    elif share is not None:
        raise RolloutError(f"rollout.share: only a canary has a share (mode {mode!r})")
    unknown = sorted(set(scope) - set(SCOPE_KEYS))
    if unknown:
        raise RolloutError(f"rollout.scope: unknown keys {unknown}; expected {list(SCOPE_KEYS)}")
    for key, values in scope.items():
        if not isinstance(values, list | tuple) or not values:
            raise RolloutError(f"rollout.scope.{key}: expected a non-empty list of values")


def unit_draw(seed: int, key: str) -> float:
    """A uniform number in [0, 1) from (seed, key): SHA-256, not Python's salted hash, so
    every process and every restart draws the same number for a task."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


@dataclass(frozen=True)
class Assignment:
    arm: str
    skip_scout: bool
    reason: str


def in_scope(scope: Mapping[str, list[str]], task: Mapping[str, Any]) -> str | None:
    """None when the task is in scope, else which key keeps it out."""
    for key, allowed in scope.items():
        value = task.get(key)
        if str(value) not in allowed:
            return f"{key}={value!r} not in {allowed}"
    return None


def assign(
    state: RolloutState, key: str, eligible: bool, task: Mapping[str, Any] | None = None
) -> Assignment:
    """The arm of one task, with the reason logged beside it."""
    if state.mode == "shadow":
        would = "eligible" if eligible else "not eligible"
        return Assignment("shadow", False, f"shadow: scouts run ({would} to skip)")
    if not eligible:
        return Assignment("ineligible", False, "the allocation keeps the scouts")
    outside = in_scope(state.scope, task or {})
    if outside is not None:
        return Assignment("out_of_scope", False, f"out of the {state.mode} scope: {outside}")
    if state.mode == "full":
        return Assignment("full", True, "full rollout")
    u = unit_draw(state.seed, key)
    share = float(state.share or 0.0)
    if u < share:
        return Assignment("canary", True, f"canary: draw {u:.4f} < share {share:g}")
    return Assignment("control", False, f"control: draw {u:.4f} >= share {share:g}")


def task_key(task_id: int | None, task_name: str | None) -> str:
    """The stable key: the JEDI task id, or the task name before submission."""
    if task_id:
        return str(int(task_id))
    if task_name:
        return f"name:{task_name}"
    raise RolloutError("task: neither jediTaskID nor taskName given; no stable canary key")
