"""The three strategies as plans (the pool they run on: :mod:`scoutless.replay.pool`).

- **scouts**: the task starts with what was requested at submission (ramCount, cpuTime;
  PanDA's defaults where none), runs its scouts, and takes the scouts' values at the
  avalanche; re-tuned when ``retune_done_jobs`` of its jobs finished (5 and 100).
- **predicted**: the bundle's recommended value of the class the policy chooses, for every
  job, released at once; never changed (only PanDA's retry rules act).
- **hybrid**: predicted at submission, then re-tuned from the task's first finished jobs,
  as JEDI re-tunes after its scouts, so a wrong prediction heals without a scout wait.
  The re-tuning may raise cpuTime but not lower it: the first jobs to finish are the
  short ones, so their cpuTime is biased low (measured: lowering it doubled walltime kills).

Predictions for all tasks are made in one batch up front (one call per target).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from scoutless.allocation.policies import make_policy
from scoutless.replay.config import ReplaySettings
from scoutless.replay.engine import StrategyPlan
from scoutless.replay.workload import Workload

if TYPE_CHECKING:
    from scoutless.bundle import Predictor

#: the targets a replay allocates from: ramCount (memory) and cpuTime (→ job walltime)
ALLOCATED_TARGETS: tuple[str, ...] = ("memory", "cputime")


def predicted_values(
    predictor: Predictor,
    features: pd.DataFrame,
    task_ids: np.ndarray,
    *,
    policy: str = "risk",
    alpha: float = 0.05,
    recall: float = 0.9,
) -> dict[str, np.ndarray]:
    """Recommended value per task (aligned to ``task_ids``) of the policy's class, per target."""
    missing = np.setdiff1d(task_ids, features.index.to_numpy())
    if missing.size:
        raise ValueError(f"no submission features for {missing.size} tasks, e.g. {missing[0]}")
    rows = features.loc[task_ids, [f.name for f in predictor.feature_specs]]
    out: dict[str, np.ndarray] = {}
    for target in ALLOCATED_TARGETS:
        if target not in predictor.targets:
            raise ValueError(f"bundle {predictor.version} does not predict {target!r}")
        calibration = () if policy == "argmax" else predictor.calibration(target)
        chosen = make_policy(policy, *calibration, alpha=alpha, recall=recall).choose(
            predictor.predict_proba(rows, targets=[target])[target]
        )
        out[target] = np.asarray(predictor.bins[target].recommended, dtype=float)[chosen]
    return out


def make_plans(
    work: Workload, cfg: ReplaySettings, predicted: Mapping[str, np.ndarray] | None
) -> list[StrategyPlan]:
    """The configured strategies' plans (predicted/hybrid need ``predicted``)."""
    plans = []
    for name in cfg.strategies:
        if name == "scouts":
            ram = np.where(
                np.isnan(work.request_ram), cfg.default_ram_mb_per_core, work.request_ram
            )
            plans.append(StrategyPlan(name, ram, work.request_cputime.copy(), True, True))
            continue
        if predicted is None:
            raise ValueError(f"strategy {name!r} needs a bundle's predictions")
        plans.append(
            StrategyPlan(
                name, predicted["memory"].copy(), predicted["cputime"].copy(), False,
                retune=name == "hybrid", retune_lowers_cputime=False,
            )
        )  # fmt: skip
    return plans
