"""The online sizer's state as data: a snapshot restored in a fresh sizer sizes on as the
uninterrupted one does, and the cap bounds what a type holds."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scoutless.config import SizingSettings
from scoutless.sizing.online import Features, OnlineSizer
from scoutless.sizing.protocol import Outcome
from scoutless.sizing.type_history import OUTCOME_COLUMNS

GB = 1e9


def _stream(n: int, seed: int = 3) -> list[tuple[str, Features, float, float]]:
    """Instances of three types, interleaved: (key, features, need, runtime)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        t = int(rng.integers(0, 3))
        size = float(rng.lognormal(np.log(2e9), 0.8))
        need = GB * (1 + t) * (size / 2e9) ** 0.4 * float(rng.lognormal(0.0, 0.3))
        out.append((f"type{t}", Features(input_size=size, request=8 * GB), need, 60.0 + t))
    return out


def _size(sizer: OnlineSizer, key: str, f: Features, need: float, runtime: float) -> list:
    """One instance as a caller drives it: first, a kill and a retry while below the need."""
    allocs = [sizer.first(key, f)]
    while allocs[-1] < need and len(allocs) < 32:
        sizer.learn(key, f, Outcome(allocs[-1], runtime / 2, censored=True))
        allocs.append(sizer.retry(key, f, allocs[-1]))
    sizer.learn(key, f, Outcome(need, runtime))
    return allocs


def _started(settings: SizingSettings) -> OnlineSizer:
    sizer = OnlineSizer(settings)
    for key, f, need, runtime in _stream(30, seed=9)[:30]:
        if key == "type0":
            sizer.start_type(key, [f] * 10, np.full(10, need), np.full(10, runtime))
    return sizer


@pytest.mark.parametrize("share", [0.0, 0.02, 0.25])
def test_restore_then_continue_sizes_as_the_uninterrupted_sizer(share: float) -> None:
    """Whatever the sample schedule: at 0.25 a type's samples lag up to ten outcomes (and
    its oldest rows wait for the anchor to go), and a restore mid-lag rebuilds them."""
    settings = SizingSettings(max_outcomes_per_type=40, sample_refresh_share=share)
    stream = _stream(160)
    whole, before = _started(settings), []
    for job in stream[:80]:
        before.append(_size(whole, *job))
    held = whole.keys()
    saved = json.loads(json.dumps({str(k): whole.snapshot(k) for k in held}))
    resumed = OnlineSizer(settings)
    for key, snap in saved.items():
        resumed.restore(key, snap)
    assert resumed.keys() == whole.keys()
    for job in stream[80:]:
        assert _size(resumed, *job) == _size(whole, *job)
    for key in held:
        assert resumed.snapshot(key) == whole.snapshot(key)
    assert any(len(a) > 1 for a in before)  # kills were learnt as censored rows


def test_a_type_holds_at_most_the_cap_outcomes_in_one_index_space() -> None:
    sizer = OnlineSizer(SizingSettings(max_outcomes_per_type=16, sample_refresh_share=0.0))
    for job in _stream(120):
        _size(sizer, *job)
    held = sizer.keys()
    for key in held:
        snap = sizer.snapshot(key)
        lengths = {len(v) for v in snap["columns"].values()}
        assert lengths == {16}  # every outcome column and every model's residual
        assert set(OUTCOME_COLUMNS) < set(snap["columns"])
        assert snap["learnt"] > 16


def test_the_oldest_rows_go_when_the_samples_are_rebuilt() -> None:
    """With a schedule the cap is enforced when the anchor moves: a type holds at most
    cap + share × cap rows, and exactly the cap right after a move."""
    cap, share = 40, 0.25
    sizer = OnlineSizer(SizingSettings(max_outcomes_per_type=cap, sample_refresh_share=share))
    held, at_moves = [], []
    for key, f, need, runtime in _stream(400):
        _size(sizer, key, f, need, runtime)
        state = sizer.types[key]
        held.append(len(state.rows))
        if state.anchor_learnt == state.learnt:
            at_moves.append(len(state.rows))
    assert max(held) <= cap + share * cap + 1
    assert max(held) > cap  # the schedule lets rows wait
    assert set(at_moves[-10:]) == {cap}


def test_equal_state_gives_equal_snapshots() -> None:
    one, two = OnlineSizer(SizingSettings()), OnlineSizer(SizingSettings())
    for sizer in (one, two):
        for job in _stream(40):
            _size(sizer, *job)
    held_one, held_two = one.keys(), two.keys()
    assert [one.snapshot(k) for k in held_one] == [two.snapshot(k) for k in held_two]
    json.dumps(one.snapshot("type1"), allow_nan=False)  # strict JSON: NaN written as null


def test_a_snapshot_that_named_a_priors_points_started_restores_them() -> None:
    """The field was ``started`` in snapshots written before it was named ``pseudo``: a state
    stored then keeps its prior's points as points (their residuals their own fit's)."""
    sizer = OnlineSizer(SizingSettings())
    points = list(2 * GB * np.exp(np.linspace(-0.4, 0.0, 10)))
    sizer.start_type("t", [Features(request=4 * GB)] * 10, points, [60.0] * 10,
                     borrowed=True, pseudo=True)  # fmt: skip
    snap = json.loads(json.dumps(sizer.snapshot("t")))
    old = {("started" if k == "pseudo" else k): v for k, v in snap.items()}
    resumed = OnlineSizer(SizingSettings())
    resumed.restore("t", old)
    assert resumed.types["t"].pseudo == 10 == sizer.types["t"].pseudo
    assert resumed.snapshot("t") == snap
