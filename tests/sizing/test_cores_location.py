"""The cores location model: a log-log line in a job's cores with its slope held to [-1, 1],
the mean bit for bit where cores do not vary, chosen by the shadow cost where a type's need
follows its cores, and a sizer's snapshot from before it existed restored into it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoutless.config import SizingSettings
from scoutless.sizing.models import Cores, Mean
from scoutless.sizing.online import MODELS, Features, OnlineSizer
from scoutless.sizing.protocol import Outcome

GB = 1e9


def test_the_line_follows_the_cores_and_extrapolates_at_the_fitted_slope() -> None:
    """Hand case: need = 2 GB × cores^0.5 exactly, seen at 4 and 8 cores; at 16 cores the
    line says 8 GB (the input-size line would have held it to 8 cores' 5.66 GB)."""
    cores = np.array([4.0, 8.0, 4.0, 8.0])
    need = 2 * GB * cores**0.5
    fitted = Cores().fit(np.log(cores), np.log(need))
    assert np.exp(fitted(np.log(16.0))) == pytest.approx(8 * GB, rel=1e-12)
    assert np.exp(fitted(np.log(1.0))) == pytest.approx(2 * GB, rel=1e-12)


def test_a_steeper_line_than_proportional_is_held_to_slope_one() -> None:
    """Need ∝ cores² in the data (noise of a small sample): the line is held to a need
    proportional to cores, through the pairs' mean."""
    cores = np.array([2.0, 4.0, 2.0, 4.0])
    xs, ys = np.log(cores), np.log(GB * cores**2)
    fitted = Cores().fit(xs, ys)
    assert fitted(np.log(8.0)) - fitted(np.log(4.0)) == pytest.approx(np.log(2.0), rel=1e-12)
    assert fitted(xs.mean()) == pytest.approx(ys.mean(), rel=1e-12)


@given(st.lists(st.floats(0.1, 50.0), min_size=1, max_size=40), st.sampled_from([1.0, 8.0]))
def test_constant_cores_are_the_mean_bit_for_bit(needs: list[float], c: float) -> None:
    ys = np.log(np.asarray(needs) * GB)
    xs = np.full(len(ys), np.log(c))
    assert Cores().fit(xs, ys)(np.log(c)) == Mean().fit(xs, ys)(np.log(c))
    assert np.array_equal(Cores().loo(xs, ys), Mean().loo(xs, ys), equal_nan=True)


def test_leave_one_out_matches_refitting_without_each_pair() -> None:
    rng = np.random.default_rng(4)
    xs = np.log(rng.choice([4.0, 6.0, 8.0, 16.0], 30))
    ys = 21 + 0.9 * xs + rng.normal(0, 0.1, 30)
    m = Cores()
    by_hand = [ys[j] - m.predict(np.delete(xs, j), np.delete(ys, j), xs[j]) for j in range(30)]
    assert np.allclose(m.loo(xs, ys), by_hand, rtol=1e-9, atol=1e-12)


def _jobs(n: int, seed: int = 1) -> list[tuple[Features, float]]:
    """An ATLAS-like task: a job's memory proportional to its cores (4/6/8, then 16)."""
    rng = np.random.default_rng(seed)
    cores = rng.choice([4.0, 6.0, 8.0], n)
    cores[-10:] = 16.0
    return [(Features(cores=c), 1.9 * GB * c * float(rng.lognormal(0, 0.05))) for c in cores]


def _walk(sizer: OnlineSizer, jobs: list[tuple[Features, float]]) -> list[float]:
    firsts = []
    for f, need in jobs:
        a = sizer.first("task", f)
        firsts.append(a)
        while a < need:
            sizer.learn("task", f, Outcome(a, 1.0, censored=True))
            a = sizer.retry("task", f, a)
        sizer.learn("task", f, Outcome(need, 1.0))
    return firsts


def test_a_task_whose_memory_follows_its_cores_is_sized_by_them() -> None:
    jobs = _jobs(120)
    sizer = OnlineSizer(SizingSettings())
    sizer.start_type("task", [f for f, _ in jobs[:20]], [n for _, n in jobs[:20]], np.ones(20))
    firsts = _walk(sizer, jobs[20:])
    assert sizer.types["task"].choice == "cores"
    needs = np.array([n for _, n in jobs[20:]])
    big = np.array([f.cores for f, _ in jobs[20:]]) == 16.0
    # the first 16-core job is sized near its need although no 16-core job was seen
    assert 0.9 < firsts[int(np.argmax(big))] / needs[big][0] < 1.4
    # the mean of all jobs, what the sizer had before, is far off for 4- and 16-core jobs
    mean_ratio = np.exp(np.mean(np.log(needs[:50]))) / needs[big][0]
    assert mean_ratio < 0.6


def test_a_snapshot_from_before_the_cores_model_restores_and_sizes() -> None:
    """A snapshot of four models and no cores column (an older sizer's): the missing column
    is unknown, the new model's shadow cost starts level with the costliest, and sizing
    goes on."""
    jobs = _jobs(80, seed=2)
    sizer = OnlineSizer(SizingSettings())
    _walk(sizer, jobs[:40])
    snap = json.loads(json.dumps(sizer.snapshot("task")))
    old = dict(snap, models=[m for m in MODELS if m != "cores"])
    old["shadow"] = {m: v for m, v in snap["shadow"].items() if m != "cores"}
    old["columns"] = {k: v for k, v in snap["columns"].items()
                      if k not in ("log_cores", "resid:cores")}  # fmt: skip
    old["choice"] = "mean" if snap["choice"] == "cores" else snap["choice"]
    resumed = OnlineSizer(SizingSettings())
    resumed.restore("task", old)
    state = resumed.types["task"]
    assert state.models == MODELS
    assert state.shadow["cores"] == max(old["shadow"].values())
    assert np.isnan(state.column("log_cores")).all()
    firsts = _walk(resumed, jobs[40:])
    assert all(np.isfinite(firsts))
    assert resumed.types["task"].choice == "cores"  # it proves itself on the new outcomes
