"""Room loads priced by the one decision: a busier room is dearer, the settings override a
bundle's loads, and a decision without any prices the rooms at load 0."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from scoutless.allocation.context import job_context
from scoutless.allocation.decider import SiteDecision
from scoutless.allocation.room_loads import BUNDLE, NONE, SETTINGS, RoomLoads
from scoutless.allocation.values import ValueDistribution
from scoutless.config import PandaDefaults, Settings

#: single-core HIMEM and long queue busy half the time, multicore rooms free
BUSY = RoomLoads.from_dict({"single": {"himem": 0.5, "long_queue": 0.5}})


def _memory(settings: Settings, loads: RoomLoads | None) -> np.ndarray:
    """Memory allocations of single-core tasks whose need straddles the standard slot."""
    medians = np.array([1500.0, 1800.0, 2000.0, 2200.0])
    dists = {"memory": ValueDistribution.of(0, np.log(medians), 0.4),
             "cputime": ValueDistribution.of(0, np.log(np.full(4, 30.0)), 0.3)}  # fmt: skip
    numbers = {"corecount": np.ones(4), "input_nfiles": np.full(4, 20.0),
               "nfiles_per_job": np.ones(4), "nevents_per_job": np.full(4, 100.0)}  # fmt: skip
    job = job_context(numbers, 4, PandaDefaults(), np.full(4, 4 * 3600.0))
    decision = SiteDecision.of(settings, room_loads=loads)
    return decision.allocate(dists, {}, job, policy="cost", alpha=0.05)["memory"].value


def test_a_busier_himem_keeps_more_tasks_out_of_it():
    free, busy = _memory(Settings(), None), _memory(Settings(), BUSY)
    assert (busy <= free).all() and (busy < free).any()
    decision = SiteDecision.of(Settings(), room_loads=BUSY)
    assert decision.room_loads.source == BUNDLE
    assert decision.rules[False].himem_load == 0.5 and decision.rules[True].himem_load == 0.0


def test_the_settings_override_the_bundles_loads_and_none_means_load_0():
    override = Settings(allocation={"room_loads": {"single": {"himem": 0.5, "long_queue": 0.5}}})
    decision = SiteDecision.of(override, room_loads=RoomLoads.none())
    assert decision.room_loads.source == SETTINGS and decision.rules[False].long_load == 0.5
    np.testing.assert_array_equal(_memory(override, None), _memory(Settings(), BUSY))
    bare = SiteDecision.of(Settings())
    assert bare.room_loads.source == NONE
    assert {(r.himem_load, r.long_load) for r in bare.rules.values()} == {(0.0, 0.0)}


def test_a_load_outside_0_1_names_its_key():
    with pytest.raises(ValidationError, match=r"single\.himem"):
        Settings(allocation={"room_loads": {"single": {"himem": 1.0}}})
