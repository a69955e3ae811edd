"""The replay on imported traces (``scoutless import``): the user's request is the incumbent.

Batch traces (SWF, sacct, condor) have no scouts: a job runs with what its user asked for.
Each row of an imported table is one job with its measured needs (run time → walltime,
used memory per core → memory) and its request (``{t}_request``). Strategies:

- **request**: the user's requested memory per core and walltime (PanDA's defaults where
  the trace has none);
- **predicted**: the bundle's allocation under the replay's policy (``cost`` by default:
  the least expected cost; ``value``; or a class policy's recommended value);
- **selective**: per job and target, the user's request wherever its expected cost under
  the model's distribution is lower than the cost-aware value's, the cost-aware value
  elsewhere (a trace has no scouts: the request is the alternative to a prediction);
- **oracle**: the job's own measured memory and walltime: perfect foresight.

A trace's walltime is priced as the cost model prices cpuTime, with one event per core,
unit corePower, 100 % efficiency and no baseWalltime, so that getJobMaxWalltime of the
"cpuTime" is the walltime itself. A trace task is one job, so the hybrid's re-tuning from a
task's first jobs has nothing to act on and is not run; retries follow the same PanDA
rules (memory ladder, walltime to the queue maximum). Only the table's test rows are
replayed: the bundle never trained on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scoutless.allocation.allocate import (
    cost_allocation,
    coverage_grid,
    value_allocation,
    z_grid,
)
from scoutless.allocation.costs import COSTS, JobContext, SiteRules
from scoutless.allocation.values import ConformalLevels, ValueDistribution
from scoutless.config import Prices, Settings
from scoutless.replay.engine import StrategyPlan
from scoutless.replay.submission import VALUE_POLICIES, class_values, site_rules
from scoutless.replay.workload import JobFrame, Workload, WorkloadError
from scoutless.sources.assemble import request_col
from scoutless.targets.spec import value_col

if TYPE_CHECKING:
    from scoutless.bundle import Predictor
    from scoutless.history.table import TrainingTable

TRACE_STRATEGIES: tuple[str, ...] = ("request", "predicted", "selective", "oracle")


def _column(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)


def trace_rows(table: TrainingTable) -> pd.DataFrame:
    """The table's test rows that ran (positive walltime), in submission order."""
    _, test = table.split(table.default_split)
    wall = _column(test, value_col("walltime"))
    rows = test[wall > 0]
    if rows.empty:
        raise WorkloadError("the trace's test rows have no job with a positive walltime")
    if "creationdate" in rows.columns:
        rows = rows.sort_values("creationdate", kind="stable")
    return rows.reset_index(drop=True)


def trace_workload(rows: pd.DataFrame, settings: Settings) -> Workload:
    """One task of one unit per trace row."""
    n = len(rows)
    cores = _column(rows, "requested_processors")
    cores = np.where(np.isnan(cores) | (cores < 1), 1.0, np.ceil(cores))
    wall = _column(rows, value_col("walltime"))
    need = np.nan_to_num(_column(rows, value_col("memory")), nan=0.0) * cores
    created = pd.to_datetime(rows.get("creationdate"), errors="coerce", utc=True)
    submit = np.zeros(n)
    if created is not None and created.notna().any():
        submit = np.nan_to_num((created - created.min()).dt.total_seconds().to_numpy(float))
    index = np.arange(n, dtype=np.int64)
    nan, zeros = np.full(n, np.nan), np.zeros(n)
    frame = JobFrame(
        task_id=index, cores=cores, wall_s=wall, maxpss_kb=need * 1024.0, nevents=nan,
        io_kb=zeros, core_power=np.ones(n), base_ram_mb=zeros, base_walltime_s=zeros,
        cpu_efficiency=np.full(n, 100.0),
    )  # fmt: skip
    kind = rows["queue"] if "queue" in rows.columns else pd.Series("trace", index=rows.index)
    return Workload(
        task_ids=_column(rows, "jeditaskid").astype(np.int64),
        submit_s=submit, first_unit=index, n_units=np.ones(n, np.int64),
        n_scouts=np.zeros(n, np.int64), request_ram=_column(rows, request_col("memory")),
        request_cputime=nan, base_ram_mb=zeros, base_walltime_s=zeros,
        cpu_efficiency=np.full(n, 100.0),
        kind=kind.fillna("unknown").astype(str).to_numpy(dtype=object),
        task=index, is_scout=np.zeros(n, bool), cores=cores, wall_s=wall, need_mb=need,
        nevents=nan, core_power=np.ones(n), frame=frame,
    )  # fmt: skip


def trace_job(work: Workload, wall_s: np.ndarray) -> JobContext:
    """Per trace job: its cores and expected walltime; events, power and efficiency set so
    that getJobMaxWalltime(x) = x (the walltime is allocated as it is asked for)."""
    n = work.n_tasks
    wall = np.where(np.isfinite(wall_s) & (wall_s > 0), wall_s, 3600.0)
    return JobContext(
        cores=work.cores.copy(), wall_s=wall, nevents=work.cores.copy(), core_power=np.ones(n),
        cpu_efficiency=np.full(n, 100.0), base_walltime_s=np.zeros(n), n_jobs=np.ones(n),
    )  # fmt: skip


#: a trace's target -> the cost model that prices it
PRICED_AS = {"memory": "memory", "walltime": "cputime"}


def expected_cost(
    target: str,
    alloc: np.ndarray,
    dist: ValueDistribution,
    levels: ConformalLevels | None,
    job: JobContext,
    rules: SiteRules,
    prices: Prices,
    grid_points: int,
) -> np.ndarray:
    """(n,) expected cost per job of allocating ``alloc`` (one value per task), over the
    same calibrated grid as ``allocation.cost_allocation`` (its ``z_grid``: one grid for
    both; this function belongs beside it in allocation/allocate.py)."""
    needs = dist.grid_at_z(z_grid(coverage_grid(grid_points), levels))
    price = COSTS[target].cost
    return price(np.asarray(alloc, float)[:, None, None], needs[:, None, :], job, rules, prices
                 ).mean(axis=2)[:, 0]  # fmt: skip


def trace_values(
    rows: pd.DataFrame, work: Workload, settings: Settings, predictor: Predictor,
    *, policy: str, alpha: float,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:  # fmt: skip
    """Per target (memory, walltime): the predicted allocation (the policy's) and the
    selective one (the request or the cost-aware value, whatever the policy)."""
    features = rows[[f.name for f in predictor.feature_specs]]
    targets = [t for t in PRICED_AS if t in predictor.targets]
    predicted: dict[str, np.ndarray] = {}
    if policy not in VALUE_POLICIES:
        predicted = class_values(predictor, features, targets, policy=policy, alpha=alpha)
    if policy not in VALUE_POLICIES:  # a class policy: selective prices what has values
        targets = [t for t in targets if predictor.has_values(t)]
    dists = {t: predictor.value_distribution(features, t) for t in targets}
    levels = {t: predictor.value_levels(t) for t in targets}
    wall = dists["walltime"].median() if "walltime" in dists else np.full(len(rows), np.nan)
    job = trace_job(work, wall)
    rules = site_rules(work, settings.replay)
    prices, grid = settings.allocation.prices, settings.allocation.grid_points
    chosen = {}
    for target in targets:
        priced = PRICED_AS[target]
        best = cost_allocation(priced, dists[target], levels[target], job, rules, prices, grid)
        if policy == "value":
            predicted[target] = value_allocation(dists[target], levels[target], alpha).value
        elif policy == "cost":
            predicted[target] = best.value
        request = _column(rows, request_col(target))
        cost = expected_cost(priced, request, dists[target], levels[target], job, rules,
                             prices, grid)  # fmt: skip
        chosen[target] = np.where(cost < best.expected_cost, request, best.value)
    return predicted, {**predicted, **chosen}


def trace_plans(
    rows: pd.DataFrame,
    settings: Settings,
    predictor: Predictor | None,
    *,
    policy: str = "cost",
    alpha: float = 0.05,
    work: Workload | None = None,
) -> tuple[list[StrategyPlan], dict[str, Any]]:
    """The request incumbent, the oracle and, with a bundle, predicted and selective; and
    how often selective kept the request, per target."""
    cfg = settings.replay
    nan = np.full(len(rows), np.nan)
    ram = _column(rows, request_col("memory"))
    ram = np.where(np.isnan(ram) | (ram <= 0), cfg.default_ram_mb_per_core, ram)
    request_wall = _column(rows, request_col("walltime"))
    plans = [StrategyPlan("request", ram, nan, False, False, walltime=request_wall)]
    notes: dict[str, Any] = {}
    if predictor is not None:
        work = work if work is not None else trace_workload(rows, settings)
        predicted, chosen = trace_values(rows, work, settings, predictor, policy=policy,
                                         alpha=alpha)  # fmt: skip
        for name, values in (("predicted", predicted), ("selective", chosen)):
            memory = values.get("memory", ram)
            memory = np.where(np.isfinite(memory) & (memory > 0), memory, ram)
            plans.append(StrategyPlan(name, memory, nan, False, False,
                                      walltime=values.get("walltime")))  # fmt: skip
        notes["request_kept"] = {
            t: float(np.mean(chosen[t] == _column(rows, request_col(t)))) for t in chosen
        }
    oracle_ram = _column(rows, value_col("memory"))
    oracle_ram = np.where(np.isfinite(oracle_ram) & (oracle_ram > 0), oracle_ram, ram)
    plans.append(StrategyPlan("oracle", oracle_ram, nan, False, False,
                              walltime=_column(rows, value_col("walltime"))))  # fmt: skip
    return plans, notes
