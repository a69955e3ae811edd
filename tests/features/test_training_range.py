"""The encoder remembers each numerical feature's training range: a task beyond it is
flagged (the models extrapolate there), one within never is; an encoder saved without a
range loads and flags nothing."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.features.encoded import InspectedFeatures
from scoutless.features.encoders import FeatureEncoder
from scoutless.features.spec import FeatureSpec

SPECS = [FeatureSpec("user", "categorical"), FeatureSpec("cores", "numerical"),
         FeatureSpec("events", "numerical")]  # fmt: skip
RNG = np.random.default_rng(3)
FRAME = pd.DataFrame({"user": ["a", "b"] * 50, "cores": RNG.choice([1.0, 8.0], 100),
                      "events": np.exp(RNG.normal(8, 2, 100))})  # fmt: skip
ENCODER = FeatureEncoder(SPECS, min_count=1).fit(FRAME)
EVENTS = (float(FRAME["events"].min()), float(FRAME["events"].max()))


def row(cores: float, events: float | None) -> dict:
    return {"user": "a", "cores": cores, "events": events}


@settings(max_examples=200, deadline=None)
@given(cores=st.sampled_from([1.0, 8.0]), events=st.floats(*EVENTS))
def test_within_the_range_is_never_flagged(cores, events) -> None:  # type: ignore[no-untyped-def]
    assert ENCODER.inspect([row(cores, events), row(1.0, None)]).outside == {}


@settings(max_examples=200, deadline=None)
@given(cores=st.one_of(st.floats(-1e300, 0.999), st.floats(8.001, 1e300)))
def test_beyond_it_is_flagged_with_the_feature_and_its_value(cores) -> None:  # type: ignore[no-untyped-def]
    inspected = ENCODER.inspect([row(1.0, 100.0), row(cores, 100.0)])
    assert inspected.outside == {1: {"cores": cores}}


def test_the_range_is_saved_and_an_encoder_saved_without_one_flags_nothing() -> None:
    saved = json.loads(json.dumps(ENCODER.to_dict()))
    assert saved["range"]["low"]["cores"] == 1.0 and saved["range"]["high"]["cores"] == 8.0
    assert FeatureEncoder.from_dict(saved).inspect([row(64.0, 3000.0)]).outside == {0: {"cores": 64.0}}
    del saved["range"]
    old = FeatureEncoder.from_dict(saved)
    assert old.inspect([row(64.0, 3000.0)]).outside == {}
    assert "range" not in old.to_dict()


def test_stacked_requests_keep_their_rows() -> None:
    first = ENCODER.inspect([row(64.0, 100.0)])
    second = ENCODER.inspect([row(1.0, 100.0), row(1.0, 1e30)])
    stacked = InspectedFeatures.stack([first, second])
    assert stacked.outside == {0: {"cores": 64.0}, 2: {"events": 1e30}}
