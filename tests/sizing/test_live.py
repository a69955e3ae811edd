"""The live protocol's clock on a three-type hand case: each instance decided in
submission order across types, with exactly the outcomes completed before it."""

from __future__ import annotations

import numpy as np
import pytest

from scoutless.sizing.live import NoClock, run_live
from scoutless.sizing.protocol import Instances, TaskType

GB, HOUR = 1e9, 3.6e6


class Recorder:
    """One sizer for every type: logs each decision and each outcome it is told."""

    name = "recorder"

    def __init__(self) -> None:
        self.log: list[tuple[str, str, int]] = []

    def begin(self, task):
        pass

    def first(self, task, i):
        self.log.append(("first", task.name, i))
        return float(task.online.need[i])

    def retry(self, task, i, failed):
        raise AssertionError("the need fits at once")

    def learn(self, task, i, outcome):
        self.log.append(("learn", task.name, i))


def _type(name: str, submit: list[float], complete: list[float] | None) -> TaskType:
    n = len(submit)
    online = Instances(
        need=np.full(n, GB), runtime=np.full(n, HOUR), input_size=np.ones(n), cpus=np.ones(n),
        request=np.full(n, 2 * GB), peak=np.full(n, GB), submit=np.asarray(submit, float),
        complete=None if complete is None else np.asarray(complete, float),
    )  # fmt: skip
    return TaskType("wf", name, Instances.concat([]), online)


def test_each_instance_knows_only_the_outcomes_completed_before_its_submission() -> None:
    # A: a0 0→10, a1 20→30; B: b0 5→25, b1 26→40; C: c0 10→12, c1 30→50. c0 is submitted
    # as a0 completes (not before: unknown); a1 at 20 knows a0 and c0; b1 at 26 knows b0;
    # c1 at 30 learns nothing new (a1 ends at 30)
    types = [_type("A", [0, 20], [10, 30]), _type("B", [5, 26], [25, 40]),
             _type("C", [10, 30], [12, 50])]  # fmt: skip
    rec = Recorder()
    out = run_live(types, lambda: [], [rec])
    assert rec.log == [
        ("first", "A", 0), ("first", "B", 0), ("first", "C", 0),
        ("learn", "A", 0), ("learn", "C", 0), ("first", "A", 1),
        ("learn", "B", 0), ("first", "B", 1), ("first", "C", 1),
    ]  # fmt: skip
    assert out["methods"]["recorder"]["instances"] == 6
    assert out["methods"]["recorder"]["wastage_gbh"] == 0
    assert set(out["task_types"]) == {"A", "B", "C"}


def test_a_table_without_times_is_refused() -> None:
    with pytest.raises(NoClock, match="wf/A"):
        run_live([_type("A", [np.nan], None)], lambda: [])
