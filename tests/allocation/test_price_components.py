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


#: where a price may be read: the components' definition, its compiled twin (held to it
#: component by component, tests/allocation/test_cost_kernels.py) and the settings
PRICED_IN = {"allocation/costs.py", "allocation/compiled_costs.py", "allocation/cost_kernels.py",
             "allocation/jit_costs.py"}  # fmt: skip


def test_a_price_is_read_only_where_the_components_are_defined():
    """Adding a price component touches allocation/costs.py alone (docs/architecture.md,
    "Adding a price component"): a component priced anywhere else fails here."""
    import re
    from pathlib import Path

    import scoutless

    fields = "|".join(sorted(set(PRICE_OF.values())))
    read = re.compile(rf"\.({fields})\b")
    root = Path(scoutless.__file__).parent
    elsewhere = [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        if path.relative_to(root).as_posix() not in PRICED_IN and path.parts[-2] != "config"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if read.search(line)
    ]
    assert not elsewhere, f"prices read outside allocation/costs.py: {elsewhere}"
