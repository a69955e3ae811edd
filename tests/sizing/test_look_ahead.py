"""No method sees the future: scale one online instance's need and runtime ×10, and every
instance after it in the protocol's order, and every allocation decided before it stays
as it was. The as-coded Witt-LR std-under (its error list shared with std, which walks the
type first) is the one that looks ahead under the peers' protocol, and the probe shows
it; the live protocol decides every method at each submission, so none does there."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from nf_synthetic import synthetic_workflow
from scoutless.config import Settings
from scoutless.sizing import lwr
from scoutless.sizing.baselines import ErrorList
from scoutless.sizing.live import run_live
from scoutless.sizing.protocol import TaskType, task_types
from scoutless.sizing.run import baseline_sizers, run_types, warm_sizer

#: the method whose look-ahead the reference code has (reported, never in the goal)
AS_CODED_LOOK_AHEAD = "witt_lr_std_under"
SETTINGS = Settings()


def _scaled(types: list[TaskType], t: int, k: int) -> list[TaskType]:
    """Type ``t``'s online instances from ``k`` on, and every later type's, ×10."""
    out = list(types)
    for j in range(t, len(types)):
        on = types[j].online
        factor = np.where(np.arange(len(on)) >= (k if j == t else 0), 10.0, 1.0)
        online = replace(on, need=on.need * factor, runtime=on.runtime * factor)
        out[j] = replace(types[j], online=online)
    return out


def _decisions(types: list[TaskType]) -> dict[str, list[list[float]]]:
    attempts: dict[str, list[list[float]]] = {}
    sizers = [*baseline_sizers(SETTINGS), warm_sizer(types, SETTINGS.sizing)]
    run_types(types, sizers, attempts=attempts)
    return attempts


@pytest.fixture(autouse=True)
def _small_lwr(monkeypatch: pytest.MonkeyPatch) -> None:
    """One LWR model with few optimiser steps: what it may know does not depend on them."""
    monkeypatch.setattr(lwr, "MODELS", 1)
    monkeypatch.setattr(lwr, "COBYLA_STEPS", 20)


def test_the_peers_protocol_decides_nothing_from_later_outcomes() -> None:
    types = task_types(synthetic_workflow(seed=3, rows=36), 1996, "demo", features="peers-rchar")[:2]
    t, k = 1, 6
    before = sum(len(x.online) for x in types[:t]) + k  # decisions that precede the probe
    base, probed = _decisions(types), _decisions(_scaled(types, t, k))
    for name, allocs in base.items():
        if name == AS_CODED_LOOK_AHEAD:
            assert allocs[:before] != probed[name][:before]
            continue
        assert allocs[:before] == probed[name][:before], name
    assert base["scoutless"][before:] != probed["scoutless"][before:]  # the probe bites


def _live(types: list[TaskType]) -> dict[str, list[list[float]]]:
    attempts: dict[str, list[list[float]]] = {}
    lists = (ErrorList(), ErrorList(), ErrorList())
    ours = [warm_sizer(types, SETTINGS.sizing)]
    run_live(types, lambda: baseline_sizers(SETTINGS, lists=lists), ours, attempts)
    return attempts


def test_the_live_protocol_decides_nothing_from_later_outcomes() -> None:
    frame = synthetic_workflow(seed=4, rows=36)
    frame["submit"] = np.random.default_rng(5).uniform(0, 2e7, len(frame)).round()
    frame["complete"] = frame["submit"] + frame["realtime"]
    types = task_types(frame, 1996, "demo", features="peers-rchar")[:2]
    subs = np.sort(np.concatenate([t.online.submit for t in types]))
    before = len(subs) // 2
    cut = subs[before]  # the probe: this submission and every later one, ×10
    probed = []
    for task in types:
        on = task.online
        f = np.where(on.submit >= cut, 10.0, 1.0)
        online = replace(on, need=on.need * f, runtime=on.runtime * f,
                         complete=on.submit + on.runtime * f)  # fmt: skip
        probed.append(replace(task, online=online))
    base, after = _live(types), _live(probed)
    for name, allocs in base.items():
        assert allocs[:before] == after[name][:before], name
    assert base["scoutless"][before:] != after["scoutless"][before:]  # the probe bites
