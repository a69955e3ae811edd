"""A trace's strategies side by side: request, predicted, selective, oracle."""

from __future__ import annotations

import numpy as np
import pandas as pd
from replay_helpers import ValuePredictor, settings_with
from scipy.stats import norm

from scoutless.allocation.values import ValueDistribution
from scoutless.config import Settings
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
    return ValuePredictor(dists, [0, 1, 2, 3], features=("key",))


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


def test_without_a_bundle_a_trace_still_runs_request_online_and_oracle():
    settings = settings_with()
    plans, notes = trace_plans(_rows(), settings, None)
    assert [p.name for p in plans] == ["request", "online", "oracle"]
    assert set(notes) == {"kill_caps"}


def test_on_a_trace_selective_weighs_costs_whatever_the_policy():
    settings = settings_with(queue_maxtime_s=72 * H)
    rows = _rows()
    work = trace_workload(rows, settings)
    cost, _ = trace_plans(rows, settings, _predictor(), policy="cost", work=work)
    value, _ = trace_plans(rows, settings, _predictor(), policy="value", alpha=0.05, work=work)
    assert np.array_equal(cost[2].walltime, value[2].walltime)  # selective: the same
    assert not np.array_equal(value[1].walltime, cost[1].walltime)  # predicted: the policy's


def _drifting(n_history: int = 12, n_before: int = 8, n_after: int = 24) -> tuple:
    """One task type (executable "a"): one-core jobs of 30 min submitted an hour apart (each
    ends before the next is sized), users asking 32 GB; the history and the first jobs need
    ~4,000 MB, the later ones ~6,000 MB (the type drifts)."""
    rng = np.random.default_rng(7)
    need = 4000.0 * np.exp(rng.normal(0.0, 0.08, n_history + n_before + n_after))
    need[n_history + n_before :] *= 1.5

    def frame(values: np.ndarray, start: int) -> pd.DataFrame:
        n = len(values)
        return pd.DataFrame({
            "jeditaskid": np.arange(start, start + n), "executable": "a", "user": "u",
            "memory_value": values, "walltime_value": 0.5 * H,
            "memory_request": 32000.0, "walltime_request": 4 * H, "requested_processors": 1,
            "creationdate": pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(n), "h"),
        })  # fmt: skip

    return frame(need[:n_history], 0), frame(need[n_history:], n_history)


def test_online_sizes_with_the_sizer_learning_each_outcome_kills_censored():
    from dataclasses import replace

    settings = settings_with(queue_maxtime_s=72 * H, memory_kill_factor=1.0)
    history, rows = _drifting()
    work = trace_workload(rows, settings)
    plans, _ = trace_plans(rows, settings, None, work=work, history=history)
    online = replace(next(p for p in plans if p.name == "online"), record=True)
    result = run_plans(work, [online], settings.replay, settings)["online"]
    log, need = result.attempt_log, rows["memory_value"].to_numpy()
    first = log.alloc_mb[log.attempt == 1][np.argsort(log.unit[log.attempt == 1])]
    # sized from the history, far below the users' 32 GB, fitting the jobs before the drift
    assert np.all(first[:8] < 2 * need[:8]) and result.first_ok[:8].mean() >= 0.75
    # the drift kills; each kill is learnt as a censored bound and retried by the sizer
    kills = int(result.memory_kills.sum())
    assert kills > 0 and not result.failed.any()
    sizing = result.sizing
    assert sizing["censored"] == sizing["retries"] == kills and sizing["history"] == 12
    assert sizing["learnt"] == len(rows) + kills and sizing["sized"] == len(rows)
    # the later allocations move to the new needs: the last jobs fit at the first attempt
    assert result.first_ok[-8:].all() and np.all(first[-8:] < 2 * need[-8:])
    assert result.first_ok[8:16].mean() < result.first_ok[-8:].mean()


def _deciding(grace: float = 1.0, cap: float = 0.25, maxtime_h: float = 72, **prices) -> tuple:
    """Four one-core jobs needing 4,000 MB for 2 h (above the 2,000 MB slot) and a model that
    knows it (σ 0.1); the pilot kills at 2× (the site's behaviour); ``prices`` override."""
    rows = _rows().assign(memory_value=4000.0, memory_request=16000.0)
    settings = settings_with(queue_maxtime_s=maxtime_h * H, memory_kill_factor=2.0)
    alloc = settings.allocation.model_copy(update={
        "guaranteed_memory_grace": grace, "max_kill_probability": cap,
        "prices": settings.allocation.prices.model_copy(update=prices),
    })  # fmt: skip
    settings = settings.model_copy(update={"allocation": alloc})
    dists = {
        "memory": ValueDistribution.of(0, np.log([4000.0] * 4), 0.1),
        "walltime": ValueDistribution.of(0, np.log([2 * H] * 4), 0.1),
    }
    work = trace_workload(rows, settings)
    plans, _ = trace_plans(rows, settings, ValuePredictor(dists, [0, 1, 2, 3], features=("key",)), work=work)
    return {p.name: p for p in plans}, settings, dists


def _killed_share(values: np.ndarray, dist: ValueDistribution) -> np.ndarray:
    """P(need > value) under the model's (exact, lognormal) distribution."""
    return norm.sf((np.log(values) - dist.mu) / dist.sigma)


def test_a_trace_decides_under_the_guaranteed_grace_not_the_pilots():
    # memory above the allocation costs nothing here: only a grace the decision counts on
    # would make need ÷ 2 (a 2,000 MB slot, killed without the pilot's 2×) look cheapest
    plans, settings, dists = _deciding(memory_overuse_gb_hour=0.0)
    cap = settings.allocation.kill_cap("memory")
    for name in ("predicted", "selective"):
        assert np.all(_killed_share(plans[name].ram, dists["memory"]) <= cap + 1e-9)
    # a site that guarantees the 2× grace: the decision may plan below the need
    graced, _, _ = _deciding(grace=2.0, memory_overuse_gb_hour=0.0)
    assert np.all(graced["predicted"].ram < 0.9 * 4000.0)


def test_a_traces_walltime_keeps_the_kill_cap_however_dear_its_slack():
    # a queue of 2.5 h: a kill's retry holds little slack, so dear slack asks a kill in six
    dear = {"walltime_slack_core_hour": 5.0, "kill_overhead": 0.0, "maxtime_h": 2.5}
    loose, _, dists = _deciding(cap=0.5, **dear)
    assert np.all(_killed_share(loose["predicted"].walltime, dists["walltime"]) > 0.15)
    plans, settings, _ = _deciding(cap=0.05, **dear)
    share = _killed_share(plans["predicted"].walltime, dists["walltime"])
    assert np.all(share <= 0.05 + 1.0 / settings.allocation.grid_points)


def _swf(path, runs: list[int], requested: int) -> None:
    """A synthetic SWF log: one-core jobs of one user, ten minutes apart, each asking
    ``requested`` seconds and running ``runs[i]`` seconds (used memory 10 MB)."""
    lines = [
        f"{i + 1} {600 * i} 0 {run} 1 {run} 10240 1 {requested} -1 1 7 1 3 1 1 -1 -1"
        for i, run in enumerate(runs)
    ]
    path.write_text("; synthetic\n" + "\n".join(lines) + "\n")


def test_a_swf_traces_kill_cap_is_the_incumbents_own_kill_share(tmp_path):
    from scoutless.replay.trace_decision import trace_caps
    from scoutless.replay.traces import trace_history
    from scoutless.sources.assemble import to_training_table
    from scoutless.sources.load import load_trace

    # 100 jobs of about 20 min; the users ask for an hour and two of them ran over it
    runs = [1200 + 7 * (i % 10) for i in range(100)]
    runs[3] = runs[17] = 4000
    _swf(tmp_path / "log.swf", runs, 3600)
    table = to_training_table(load_trace("swf", [tmp_path / "log.swf"], settings=Settings()), test_fraction=0.2, settings=Settings())
    history = trace_history(table)
    over = int((history["walltime_value"] > 3600).sum())
    settings = settings_with()
    caps = trace_caps(history, settings)
    assert over == 2 and caps["walltime"] == (over + 1) / (len(history) + 2)
    assert caps["memory"] == settings.allocation.kill_cap("memory")  # no memory requests
    off = settings.model_copy(update={"replay": settings.replay.model_copy(
        update={"trace_incumbent_cap": False})})  # fmt: skip
    assert trace_caps(history, off)["walltime"] == settings.allocation.kill_cap("cputime")


def test_a_cap_below_the_grids_resolution_is_kept_on_the_distribution():
    # history: the users' requests were exceeded once in 500 jobs: cap 2/502, below 1/96
    history = pd.DataFrame({"walltime_value": [1.0] * 499 + [9.0], "walltime_request": 2.0})
    rows = _rows()
    settings = settings_with(queue_maxtime_s=72 * H)
    work = trace_workload(rows, settings)
    plans, notes = trace_plans(rows, settings, _predictor(), work=work, history=history)
    cap = notes["kill_caps"]["walltime"]
    assert cap == 2 / 502 < 1 / (2 * settings.allocation.grid_points)
    walltime = {p.name: p.walltime for p in plans}["predicted"]
    share = _killed_share(walltime, _predictor().dists["walltime"])
    assert np.all(share[[0, 2, 3]] <= cap + 1e-9)  # asking 48 h, nothing, 4 h
    # the cap is the users' own kill share, so their request meets it: the job asking 1 h
    # is floored at its request, not above it (the cost-aware value, above, stands)
    assert share[1] > cap and walltime[1] >= 1 * H


def test_online_prices_a_kill_as_the_cores_lost_not_the_memory_held():
    from scoutless.replay.traces import MB, kill_price
    from scoutless.sizing.features import Release
    from scoutless.sizing.online import OnlineSizer

    settings = settings_with()
    price = kill_price(settings)
    narrow, wide = price(Release(cores=1)), price(Release(cores=64))
    p = settings.allocation.prices
    assert narrow.holds == wide.holds == 0.0
    # per core: a kill loses each core's run, a fit's excess is each core's memory slack;
    # the sizer charges memory_kill_share of that whole-run price
    share = settings.allocation.memory_kill_share
    assert narrow.fixed == (1 + p.kill_overhead) / p.memory_gb_hour * 1024 * MB * share
    whole = settings.model_copy(update={
        "allocation": settings.allocation.model_copy(update={"memory_kill_share": 1.0})})  # fmt: skip
    assert kill_price(whole)(Release(cores=1)).fixed == narrow.fixed / share
    rng = np.random.default_rng(1)
    needs = 2e9 * np.exp(rng.normal(0.0, 0.3, 40))  # a kill: 2 GB of slack per core
    sizer = OnlineSizer(settings.sizing, failure_price=price)
    sizer.start_type("t", [Release()] * 40, needs, np.ones(40))
    # both sides of the price scale with the cores: the same headroom per core
    assert p == settings.allocation.prices_for("MCORE")  # one price for both widths
    assert wide.fixed == narrow.fixed
    assert sizer.first("t", Release(cores=64)) == sizer.first("t", Release(cores=1))
    assert sizer.first("t", Release(cores=1)) > np.median(needs)
    capped = OnlineSizer(settings.sizing, failure_price=price, max_kill_probability=0.01)
    capped.start_type("t", [Release()] * 40, needs, np.ones(40))
    assert capped.first("t", Release(cores=1)) >= np.quantile(needs, 0.97)
