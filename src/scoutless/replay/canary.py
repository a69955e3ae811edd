"""A replayed canary, per rollout arm, in the definitions ``monitor impact`` uses.

The replay's own metrics (``replay/metrics.py``) are PanDA operators' distributions and
totals; the rollout's impact figures are ratios of per-task sums (``ops/impact.py``'s
table in docs/how-to/rollout.md). This module computes the latter from the replay's
per-task accumulators — not from the attempts it writes — so a replayed canary written as
PanDA's records (``replay --write-history``) and read back by ``monitor impact`` must give
the same figures per arm: the check that the writer, the collector and the impact's
definitions agree.

Per task t (``num`` / ``den``; an arm's figure is Σ num ÷ Σ den over its tasks):

* ``first_prod_job_h``: submission → its first production job's start, over 1;
* ``completion_h``: submission → its last job's end, over 1 where it completed;
* ``first_attempt_success``, ``memory_kills``, ``walltime_kills``, ``retries_per_job``:
  over the jobs that ran;
* ``wasted_core_hours``, ``memory_slack_gb_hours``, ``walltime_slack_core_hours``: per
  task that ran a job;
* ``memory_slack_rel``: Σ run time × (allocation − maxPSS)⁺ ÷ allocation over Σ run time
  (every attempt); ``walltime_slack_rel``: the same with the walltime limit, successes;
* ``memory_vs_scouts``, ``cputime_vs_scouts``: the prediction ÷ what the task ended with
  (jedi_tasks' ramcount, cputime); ``walltime_vs_scouts``: no walltime is predicted here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from scoutless.replay.result import ReplayResult
from scoutless.replay.workload import Workload

HOUR = 3600.0
#: the impact figures, in their report order (ops/impact.py reads them from here)
IMPACT_FIGURES = (
    "first_prod_job_h", "completion_h", "first_attempt_success", "memory_kills",
    "walltime_kills", "retries_per_job", "wasted_core_hours", "memory_slack_gb_hours",
    "memory_slack_rel", "walltime_slack_core_hours", "walltime_slack_rel",
    "memory_vs_scouts", "cputime_vs_scouts", "walltime_vs_scouts",
)  # fmt: skip


@dataclass(frozen=True)
class Rehearsal:
    """What a replayed canary hands to ``replay --write-history``."""

    work: Workload
    result: ReplayResult
    arms: np.ndarray  # per task
    reasons: np.ndarray  # per task: the arm's reason, as the listener logs it
    predicted_ram: np.ndarray  # per task, MB/core: the prediction (harm included)
    predicted_cputime: np.ndarray  # per task, HS06·s/event
    meta: dict[str, Any]  # share, seed, harm, policy, alpha, bundle
    scouted: np.ndarray  # per task: kept its scouts (every task in an A/A rehearsal)

    @property
    def unit_is_scout(self) -> np.ndarray:
        """Per unit: ran as a scout (its task kept its scouts)."""
        return self.work.is_scout & self.scouted[self.work.task]


def _put(out: dict[str, np.ndarray], name: str, num: np.ndarray, den: np.ndarray) -> None:
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    valid = np.isfinite(num) & np.isfinite(den) & (den > 0)
    out[f"{name}_num"] = np.where(valid, num, 0.0)
    out[f"{name}_den"] = np.where(valid, den, 0.0)


def task_parts(
    result: ReplayResult, work: Workload, predicted_ram: np.ndarray, predicted_cpu: np.ndarray
) -> pd.DataFrame:
    """Per task (indexed by jeditaskid): ``<figure>_num`` and ``<figure>_den``."""
    n_t = work.n_tasks
    ran = result.attempts > 0
    jobs = np.bincount(work.task, weights=ran, minlength=n_t)
    first_ok = np.bincount(work.task, weights=result.first_ok & ran, minlength=n_t)
    attempts = np.bincount(work.task, weights=result.attempts, minlength=n_t)
    has_jobs = (jobs > 0).astype(float)
    out: dict[str, np.ndarray] = {}
    _put(out, "first_prod_job_h", result.first_production_s / HOUR, np.ones(n_t))
    _put(out, "completion_h", result.completion_s / HOUR, np.ones(n_t))
    _put(out, "first_attempt_success", first_ok, jobs)
    _put(out, "memory_kills", result.memory_kills, jobs)
    _put(out, "walltime_kills", result.walltime_kills, jobs)
    _put(out, "retries_per_job", attempts - jobs, jobs)
    _put(out, "wasted_core_hours", result.wasted_core_s / HOUR, has_jobs)
    _put(out, "memory_slack_gb_hours", result.slack_mb_s / 1024.0 / HOUR, has_jobs)
    _put(out, "memory_slack_rel", result.memory_slack_rel_s, result.run_s)
    _put(out, "walltime_slack_core_hours", result.walltime_slack_core_s / HOUR, has_jobs)
    _put(out, "walltime_slack_rel", result.walltime_slack_rel_s, result.ok_run_s)
    _put(out, "memory_vs_scouts", predicted_ram, result.final_ram)
    _put(out, "cputime_vs_scouts", predicted_cpu, result.final_cputime)
    _put(out, "walltime_vs_scouts", np.zeros(n_t), np.zeros(n_t))
    return pd.DataFrame(out, index=pd.Index(work.task_ids, name="jeditaskid"))


def ratio_of_sums(parts: pd.DataFrame) -> dict[str, float | None]:
    """Each figure over the given tasks (None where no task counts)."""
    out: dict[str, float | None] = {}
    for name in IMPACT_FIGURES:
        den = float(parts[f"{name}_den"].sum())
        out[name] = float(parts[f"{name}_num"].sum()) / den if den > 0 else None
    return out


def arm_figures(rehearsal: Rehearsal) -> dict[str, dict[str, Any]]:
    """replay.json's ``strategies.canary.arms``: per arm, its tasks and its figures."""
    parts = task_parts(
        rehearsal.result, rehearsal.work, rehearsal.predicted_ram, rehearsal.predicted_cputime
    )
    out = {}
    for arm in sorted(set(rehearsal.arms.tolist())):
        chosen = parts[rehearsal.arms == arm]
        out[str(arm)] = {"n_tasks": len(chosen), "figures": ratio_of_sums(chosen)}
    return out
