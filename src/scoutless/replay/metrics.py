"""What a PanDA operator reads off a replay: waits, completions, kills, retries, waste.

One summary function serves the whole replay, each target class and each task kind, so
the breakdowns cannot disagree with the totals. Distributions give P50/P90 (and, overall,
``cdf_points`` quantiles for the report's CDF plots).

Slack comes absolute (GB·hours of memory, core-hours of walltime) and relative as
Autopilot (Rzadca et al., EuroSys 2020) defines it: (limit − usage) ÷ limit, averaged over
the time jobs run. Memory: the allocation against the job's maxPSS, every attempt (a
killed one has none); walltime: the limit against the run time, successful attempts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from scoutless.replay.result import BROKEN, EXHAUSTED, ReplayResult
from scoutless.replay.workload import Workload

HOUR = 3600.0


def _distribution(values: np.ndarray) -> dict[str, float | None]:
    v = values[np.isfinite(values)]
    if not v.size:
        return {"p50": None, "p90": None}
    return {"p50": float(np.quantile(v, 0.5)), "p90": float(np.quantile(v, 0.9))}


def _cdf(values: np.ndarray, n_points: int) -> list[float]:
    v = values[np.isfinite(values)]
    return np.quantile(v, np.linspace(0, 1, n_points)).tolist() if v.size else []


def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den > 0 else None


def summary(result: ReplayResult, work: Workload, tasks: np.ndarray) -> dict[str, Any]:
    """The replay.json metrics of the tasks selected by the boolean mask ``tasks``."""
    units = tasks[work.task]
    ran = units & (result.attempts > 0)
    n_ran = int(ran.sum())
    used = float(result.used_core_s[tasks].sum()) / HOUR
    wasted = float(result.wasted_core_s[tasks].sum()) / HOUR
    return {
        "time_to_first_job_s": _distribution(result.first_production_s[tasks]),
        "task_completion_s": _distribution(result.completion_s[tasks]),
        "first_attempt_success": _ratio(float(result.first_ok[ran].sum()), n_ran),
        "memory_kills": int(result.memory_kills[tasks].sum()),
        "walltime_kills": int(result.walltime_kills[tasks].sum()),
        "retries_per_job": _ratio(float(result.attempts[ran].sum()) - n_ran, n_ran),
        "wasted_core_hours": wasted,
        "used_core_hours": used,
        "wasted_share": _ratio(wasted, used),
        "memory_slack_gb_hours": float(result.slack_mb_s[tasks].sum()) / 1024.0 / HOUR,
        "memory_slack_relative": _ratio(
            float(result.memory_slack_rel_s[tasks].sum()), float(result.run_s[tasks].sum())
        ),
        "walltime_slack_core_hours": float(result.walltime_slack_core_s[tasks].sum()) / HOUR,
        "walltime_slack_relative": _ratio(
            float(result.walltime_slack_rel_s[tasks].sum()), float(result.ok_run_s[tasks].sum())
        ),
        **retry_figures(result, units, tasks),
        "tasks_broken": int((result.status[tasks] == BROKEN).sum()),
        "tasks_exhausted": int((result.status[tasks] == EXHAUSTED).sum()),
        "jobs_failed": int(result.failed[units].sum()),
        "n_tasks": int(tasks.sum()),
        "n_jobs": int(units.sum()),
    }


def retry_figures(result: ReplayResult, units: np.ndarray, tasks: np.ndarray) -> dict[str, Any]:
    """How the retries went: jobs killed for memory more than once, the attempts a job
    that fitted took (its successful one included), and the memory the killed attempts
    held (GB·h); None each where the result does not carry them."""
    names = ("jobs_memory_killed_twice", "attempts_per_fitted_job", "failed_attempts_gb_hours",
             "wasted_core_hours_short_maxtime")  # fmt: skip
    if not result.unit_memory_kills.size:
        return dict.fromkeys(names)
    fitted = units & (result.attempts > 0) & ~result.failed
    fitted_attempts = float(result.attempts[fitted].sum())
    return {
        "jobs_memory_killed_twice": int((result.unit_memory_kills[units] > 1).sum()),
        "attempts_per_fitted_job": _ratio(fitted_attempts, float(fitted.sum())),
        "failed_attempts_gb_hours": float(result.failed_mb_s[tasks].sum()) / 1024.0 / HOUR,
        "wasted_core_hours_short_maxtime": float(result.short_kill_core_s[tasks].sum()) / HOUR,
    }


def strategy_metrics(
    result: ReplayResult,
    work: Workload,
    classes: Mapping[str, np.ndarray],
    cdf_points: int,
) -> dict[str, Any]:
    """Overall summary + CDFs, then the same summary per true target class and task kind."""
    everything = np.ones(work.n_tasks, dtype=bool)
    out = summary(result, work, everything)
    out["cdf"] = {
        "time_to_first_job_s": _cdf(result.first_production_s, cdf_points),
        "task_completion_s": _cdf(result.completion_s, cdf_points),
        "memory_slack_gb_hours": _cdf(result.slack_mb_s / 1024.0 / HOUR, cdf_points),
    }
    out["by_class"] = {
        target: {
            str(label): summary(result, work, labels == label)
            for label in sorted(set(labels.tolist()))
        }
        for target, labels in classes.items()
    }
    out["by_kind"] = {
        str(kind): summary(result, work, work.kind == kind)
        for kind in sorted(set(work.kind.tolist()))
    }
    out["events"] = result.n_events
    out["pool"] = result.info
    return out
