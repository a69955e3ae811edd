"""A trace's strategies side by side: request, predicted, selective, oracle."""

from __future__ import annotations

import numpy as np
import pandas as pd
from replay_helpers import ValuePredictor, settings_with

from scoutless.allocation.values import ValueDistribution
from scoutless.replay.runner import run_plans
from scoutless.replay.traces import TRACE_STRATEGIES, trace_plans, trace_workload

H = 3600.0


def _rows() -> pd.DataFrame:
    """Four one-core jobs of 1,000 MB and 2 h; the users ask for 16 GB, 1,000 MB, nothing,
    and 3,000 MB, and for 48 h, 1 h, nothing and 4 h."""
    return pd.DataFrame(
        {
            "key": [0, 1, 2, 3],
            "jeditaskid": [10, 11, 12, 13],
            "memory_value": [1000.0] * 4,
            "walltime_value": [2 * H] * 4,
            "memory_request": [16000.0, 1000.0, np.nan, 3000.0],
            "walltime_request": [48 * H, 1 * H, np.nan, 4 * H],
            "requested_processors": 1,
            "creationdate": pd.Timestamp("2024-01-01"),
        }
    )


def _predictor() -> ValuePredictor:
    dists = {
        "memory": ValueDistribution.of(0, np.log([1000.0] * 4), 0.1),
        "walltime": ValueDistribution.of(0, np.log([2 * H] * 4), 0.1),
    }
    return ValuePredictor(dists, [0, 1, 2, 3])


def test_a_trace_runs_request_predicted_selective_and_oracle():
    settings = settings_with(queue_maxtime_s=72 * H)
    rows = _rows()
    work = trace_workload(rows, settings)
    plans, notes = trace_plans(rows, settings, _predictor(), policy="cost", work=work)
    assert tuple(p.name for p in plans) == TRACE_STRATEGIES
    by_name = {p.name: p for p in plans}
    predicted, selective = by_name["predicted"], by_name["selective"]
    # the user's absurd or missing requests are never kept; the cost-aware value is
    assert selective.walltime[0] == predicted.walltime[0] < 48 * H
    assert selective.walltime[2] == predicted.walltime[2]
    assert 0.0 <= notes["request_kept"]["walltime"] <= 0.5
    results = run_plans(work, plans, settings.replay, settings)
    oracle, request = results["oracle"], results["request"]
    assert oracle.memory_kills.sum() == 0 and oracle.walltime_kills.sum() == 0
    assert request.walltime_kills[1] > 0  # asked for 1 h, ran 2 h
    assert results["predicted"].walltime_kills.sum() == 0  # the need sits well inside


def test_without_a_bundle_a_trace_still_runs_request_and_oracle():
    settings = settings_with()
    plans, notes = trace_plans(_rows(), settings, None)
    assert [p.name for p in plans] == ["request", "oracle"] and notes == {}


def test_on_a_trace_selective_weighs_costs_whatever_the_policy():
    settings = settings_with(queue_maxtime_s=72 * H)
    rows = _rows()
    work = trace_workload(rows, settings)
    cost, _ = trace_plans(rows, settings, _predictor(), policy="cost", work=work)
    value, _ = trace_plans(rows, settings, _predictor(), policy="value", alpha=0.05, work=work)
    assert np.array_equal(cost[2].walltime, value[2].walltime)  # selective: the same
    assert not np.array_equal(value[1].walltime, cost[1].walltime)  # predicted: the policy's
