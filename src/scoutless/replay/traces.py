"""The replay on imported traces (``scoutless import``): the user's request is the incumbent.

Batch traces (SWF, sacct, condor) have no scouts: a job runs with what its user asked for.
Each row of an imported table is one job with its measured needs (run time → walltime,
used memory per core → memory) and its request (``{t}_request``). Strategies:

- **request**: the user's requested memory per core and walltime (PanDA's defaults where
  the trace has none);
- **predicted**: the bundle's recommended value of the class its policy chooses.

A trace task is one job, so the hybrid's re-tuning from a task's first jobs has nothing to
act on and is not run; retries follow the same PanDA rules (memory ladder, walltime to the
queue maximum). Only the table's test rows are replayed: the bundle never trained on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from scoutless.config import Settings
from scoutless.replay.engine import StrategyPlan
from scoutless.replay.workload import JobFrame, Workload, WorkloadError
from scoutless.sources.assemble import request_col
from scoutless.targets.spec import value_col

if TYPE_CHECKING:
    from scoutless.bundle import Predictor
    from scoutless.history.table import TrainingTable

TRACE_STRATEGIES: tuple[str, ...] = ("request", "predicted")


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


def trace_plans(
    rows: pd.DataFrame,
    settings: Settings,
    predictor: Predictor | None,
    *,
    policy: str = "risk",
    alpha: float = 0.05,
) -> list[StrategyPlan]:
    """The request incumbent and, with a bundle, its predictions (memory, walltime)."""
    from scoutless.allocation.policies import make_policy

    cfg = settings.replay
    nan = np.full(len(rows), np.nan)
    ram = _column(rows, request_col("memory"))
    ram = np.where(np.isnan(ram) | (ram <= 0), cfg.default_ram_mb_per_core, ram)
    plans = [
        StrategyPlan(
            "request", ram, nan, False, False, walltime=_column(rows, request_col("walltime"))
        )
    ]
    if predictor is None:
        return plans
    features = rows[[f.name for f in predictor.feature_specs]]
    values: dict[str, np.ndarray] = {}
    for target in ("memory", "walltime"):
        if target not in predictor.targets:
            continue
        calibration = () if policy == "argmax" else predictor.calibration(target)
        proba = predictor.predict_proba(features, targets=[target])[target]
        chosen = make_policy(policy, *calibration, alpha=alpha).choose(proba)
        values[target] = np.asarray(predictor.bins[target].recommended, dtype=float)[chosen]
    predicted_ram = values.get("memory", ram)
    plans.append(
        StrategyPlan("predicted", predicted_ram, nan, False, False, walltime=values.get("walltime"))
    )
    return plans
