"""No method sees the future: scale one online instance's need and runtime ×10, and every
instance after it in the protocol's order, and every allocation decided before it stays
as it was. The as-coded Witt-LR std-under (its error list shared with std, which walks the
type first) is the one that looks ahead, and the probe shows it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from nf_synthetic import synthetic_workflow
from scoutless.sizing import lwr
from scoutless.sizing.protocol import TaskType, task_types
from scoutless.sizing.run import baseline_sizers, run_types, warm_sizer

#: the method whose look-ahead the reference code has (reported, never in the goal)
AS_CODED_LOOK_AHEAD = "witt_lr_std_under"


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
    run_types(types, [*baseline_sizers(), warm_sizer(types)], attempts)
    return attempts


@pytest.fixture(autouse=True)
def _small_lwr(monkeypatch: pytest.MonkeyPatch) -> None:
    """One LWR model with few optimiser steps: what it may know does not depend on them."""
    monkeypatch.setattr(lwr, "MODELS", 1)
    monkeypatch.setattr(lwr, "COBYLA_STEPS", 20)


def test_the_peers_protocol_decides_nothing_from_later_outcomes() -> None:
    types = task_types(synthetic_workflow(seed=3, rows=40), 1996, "demo")
    t, k = 1, 6
    before = sum(len(x.online) for x in types[:t]) + k  # decisions that precede the probe
    base, probed = _decisions(types), _decisions(_scaled(types, t, k))
    for name, allocs in base.items():
        if name == AS_CODED_LOOK_AHEAD:
            assert allocs[:before] != probed[name][:before]
            continue
        assert allocs[:before] == probed[name][:before], name
    assert base["scoutless"][before:] != probed["scoutless"][before:]  # the probe bites
