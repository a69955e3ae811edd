"""The peers' protocol: eligible instances, the split's order, the accounting."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import train_test_split

from scoutless.sizing.baselines import Tovar
from scoutless.sizing.protocol import Instances, TaskType, eligible_types, peers_split, walk

GB, HOUR = 1e9, 3.6e6


class Scripted:
    """A sizer that plays fixed attempts: instance i gets ``script[i]`` in turn."""

    name = "scripted"

    def __init__(self, script: list[list[float]]):
        self.script = script

    def begin(self, task):
        self.learnt = []

    def first(self, task, i):
        self.attempt = 1
        return self.script[i][0]

    def retry(self, task, i, failed):
        self.attempt += 1
        return self.script[i][self.attempt - 1]

    def learn(self, task, i, outcome):
        self.learnt.append(outcome.need)


def _task(need, runtime) -> TaskType:
    n = len(need)
    online = Instances(
        need=np.asarray(need) * GB, runtime=np.asarray(runtime) * HOUR, input_size=np.ones(n),
        cpus=np.ones(n), request=np.full(n, 8 * GB), peak=np.asarray(need) * GB,
    )  # fmt: skip
    return TaskType("wf", "t", Instances.concat([]), online)


def test_accounting_of_a_hand_worked_three_instance_sequence() -> None:
    # need 2 GB for 1 h, given 3: 1 GB·h over. need 4 GB for 2 h, given 2 then 3 (both
    # fail: 4 + 6 GB·h under, 2 failures) then 5: 2 GB·h over. need 1 GB for 0.5 h, given 1.
    sizer = Scripted([[3 * GB], [2 * GB, 3 * GB, 5 * GB], [1 * GB]])
    tally = walk(sizer, _task([2, 4, 1], [1, 2, 0.5]), keep_attempts=True)
    cell = tally.summary()
    assert cell["over_gbh"] == pytest.approx(3.0) and cell["under_gbh"] == pytest.approx(10.0)
    assert cell["wastage_gbh"] == pytest.approx(13.0) and cell["failures"] == 2
    assert cell["maq"] == pytest.approx(10.5 / 23.5) and cell["instances"] == 3
    assert sizer.learnt == [2 * GB, 4 * GB, 1 * GB]  # the need is told after the fit only


def test_a_retry_that_never_reaches_the_need_is_an_error_naming_the_instance() -> None:
    sizer = Scripted([[1 * GB] * 100])
    with pytest.raises(RuntimeError, match="scripted: wf/t instance 0"):
        walk(sizer, _task([2], [1]))


def test_eligible_types_in_first_named_order_with_the_peers_filters() -> None:
    rows = lambda p, n, **kw: pd.DataFrame({"process": p, "rss": 1e9, "realtime": 1000, **kw},  # noqa: E731
                                           index=range(n))  # fmt: skip
    frame = pd.concat([
        rows("B", 40), rows("A", 40), rows("short", 33), rows("zero", 40, realtime=0),
        rows("A", 5, rss=0),  # dropped rows: A keeps 40
    ], ignore_index=True)  # fmt: skip
    types = eligible_types(frame)
    assert [name for name, _ in types] == ["B", "A"] and len(types[1][1]) == 40


def test_the_split_is_sklearns_order_for_the_peers_arrays() -> None:
    n = 57
    inst = Instances(*(np.arange(n, dtype=float) + k for k in range(6)))
    hist, online = peers_split(inst, seed=1996)
    x = pd.DataFrame({"x": np.arange(n)})
    _, x_test, _, y_test = train_test_split(x, np.arange(n) + 0.0, test_size=0.7, random_state=1996)
    assert list(online.input_size - 2) == list(x_test["x"]) and list(online.need) == list(y_test)
    assert len(hist) + len(online) == n


def test_tovars_first_allocation_by_hand() -> None:
    # needs 1, 1, 1, 10 GB for equal times: a = 10 costs 10·t̄; a = 1 costs 1·t̄ + 10·t̄/4
    history = Instances(
        need=np.array([1, 1, 1, 10.0]) * GB, runtime=np.ones(4), input_size=np.ones(4),
        cpus=np.ones(4), request=np.ones(4), peak=np.ones(4),
    )  # fmt: skip
    tovar = Tovar()
    tovar.begin(TaskType("wf", "t", history, history))
    assert tovar.first(None, 0) == 1 * GB
    assert tovar.retry(None, 0, 1 * GB) == 10 * GB and tovar.retry(None, 0, 10 * GB) == 128e9
