"""The price components are one list: what a decision expects and what the replay
realised name the same components, each priced by a field of ``Prices``."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from scoutless.allocation.costs import COSTS, PRICE_OF, realised_components
from scoutless.config import Prices


def test_every_expected_component_is_a_priced_one():
    for target, model in COSTS.items():
        assert set(model.names) <= set(PRICE_OF), target
    assert set(PRICE_OF.values()) <= set(Prices.model_fields)


def test_the_realised_components_are_every_priced_one_in_the_tables_order():
    n = 3
    done = SimpleNamespace(**{field: np.full(n, 3600.0) for field in (
        "wasted_core_s", "killed_job_core_s", "priced_slack_mb_s", "overuse_mb_s",
        "himem_core_s", "long_core_s", "walltime_slack_core_s", "scout_wait_s", "room_delay_s",
    )})  # fmt: skip
    price = {field: np.full(n, 2.0) for field in PRICE_OF.values()}
    congested = {"himem": np.ones(n), "long_queue": np.full(n, 1.5)}
    parts = realised_components(done, price, congested)
    assert list(parts) == list(PRICE_OF)
    assert parts["kills"].tolist() == [3.0] * n  # an hour wasted + 2 × an hour's job
    assert parts["long_queue"].tolist() == [3.0] * n  # 2 × 1.5 congestion × an hour
    assert parts["memory_slack"].tolist() == [2.0 / 1024.0] * n  # MB·s → GB-hours
