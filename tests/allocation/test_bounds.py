"""Every answer's value is finite, set (0 reads as unset to JEDI, but for ioIntensity)
and within what the site can allocate."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from scoutless.allocation.bounds import UNBOUNDED, AnswerBounds
from scoutless.config import Settings

BOUNDS = AnswerBounds.of(Settings())
TARGETS = ["memory", "cputime", "io", "walltime", "a_trace_target"]


def test_the_limits_are_the_sites_largest_queue() -> None:
    site = Settings(replay={"max_ram_mb_per_core": 5000, "queue_maxtime_s": 3600})
    bounds = AnswerBounds.of(site)
    assert bounds.limit("memory") == 5000 and bounds.limit("walltime") == 3600
    assert AnswerBounds.of(Settings()).limit("memory") == Settings().replay.ram_ladder_mb_per_core[-1]
    assert bounds.limit("a_trace_target") == UNBOUNDED and bounds.least("a_trace_target") == 0
    assert bounds.least("cputime") == 0.001 and bounds.least("io") == 0


@given(target=st.sampled_from(TARGETS), values=arrays(np.float64, st.integers(0, 20)))
def test_clamped_values_are_finite_non_negative_and_within(target, values) -> None:  # type: ignore[no-untyped-def]
    out = BOUNDS.clamp(target, values)
    high = BOUNDS.limit(target)
    low = BOUNDS.least(target)
    assert np.isfinite(out).all() and (out >= low).all() and (out <= high).all()
    inside = np.isfinite(values) & (values >= low) & (values <= high)
    assert (out[inside] == values[inside]).all()
    for value, one in zip(values.tolist(), out.tolist(), strict=True):
        assert BOUNDS.clamp_one(target, value) == one
    assert math.isfinite(BOUNDS.clamp_one(target, math.nan))
