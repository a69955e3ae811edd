"""How far scouts are from their whole task, measured the same way on real and synthetic jobs.

PanDA derives a task's parameters from its first scout jobs; the question a replay asks is
how well those few jobs stand for the thousands that follow. The measures here put real
ATLAS tasks (``../shared/data/traces/panda/job_records_*.csv``) and a synthetic history
side by side, through the project's one target code (:func:`compute_task_targets`):

- ratio scouts / whole task per target, summarised as P5, median, P95, median |log ratio|;
- within-task coefficient of variation of maxPSS per core and of wall time;
- share of large tasks whose jobs ran with mixed core counts;
- how often the scouts' class equals the whole task's class (default bins).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from scoutless.config import Settings
from scoutless.sources.panda_jobs import read_panda_jobs
from scoutless.targets.bins import load_bins
from scoutless.targets.estimators import compute_task_targets, finished_jobs, wall_seconds
from scoutless.targets.job_records import estimator_inputs
from scoutless.targets.spec import TARGET_NAMES

MIN_JOBS = 50  # tasks with fewer finished jobs are mostly scouts: their ratio says nothing


@dataclass(frozen=True)
class TaskJobs:
    """jobsarchived4-like jobs and their tasks, ready for :func:`compute_task_targets`."""

    jobs: pd.DataFrame
    tasks: pd.DataFrame


def real_task_jobs(paths: list[Path]) -> TaskJobs:
    """The real per-job exports, one task per file, scouts = first 10 by pandaid."""
    if not paths:
        raise FileNotFoundError("no job_records_*.csv files given")
    rows, _ = read_panda_jobs(paths)
    rows = rows.drop_duplicates("pandaid").reset_index(drop=True)
    jobs, tasks = estimator_inputs(rows, "jeditaskid_of_task")
    jobs["computingsite"] = rows.get("computingsite")
    return TaskJobs(jobs, tasks)


def scout_ratios(data: TaskJobs, settings: Settings, min_jobs: int = MIN_JOBS) -> pd.DataFrame:
    """Per task (≥ ``min_jobs`` finished jobs): scouts' value / whole task's value per target."""
    whole = compute_task_targets(data.jobs, data.tasks, settings=settings)
    scouts = compute_task_targets(data.jobs, data.tasks, settings=settings, scouts_only=True)
    keep = whole.index[whole["n_jobs"] >= min_jobs]
    ratio = scouts.reindex(keep)[list(TARGET_NAMES)] / whole.loc[keep, list(TARGET_NAMES)]
    return ratio.replace([np.inf, -np.inf], np.nan)


def scout_class_agreement(data: TaskJobs, settings: Settings, min_jobs: int = MIN_JOBS) -> dict:
    """Share of tasks whose scouts give the whole task's class, per target (default bins)."""
    whole = compute_task_targets(data.jobs, data.tasks, settings=settings)
    scouts = compute_task_targets(data.jobs, data.tasks, settings=settings, scouts_only=True)
    keep = whole.index[whole["n_jobs"] >= min_jobs]
    out = {}
    for target, bins in load_bins().items():
        a = bins.classify(whole.loc[keep, target].to_numpy(float))
        b = bins.classify(scouts.reindex(keep)[target].to_numpy(float))
        ok = (a >= 0) & (b >= 0)
        out[target] = round(float((a[ok] == b[ok]).mean()), 3) if ok.any() else None
    return out


def summarise(ratios: pd.Series) -> dict:
    """P5, median, P95 and median |log ratio| of one target's ratios."""
    r = ratios.dropna().to_numpy(float)
    r = r[r > 0]
    if not r.size:
        return {"n": 0}
    return {
        "n": int(r.size),
        "p5": round(float(np.percentile(r, 5)), 3),
        "median": round(float(np.median(r)), 3),
        "p95": round(float(np.percentile(r, 95)), 3),
        "median_abs_log": round(float(np.median(np.abs(np.log(r)))), 4),
    }


def within_task_shape(data: TaskJobs, min_jobs: int = MIN_JOBS) -> dict:
    """Median within-task CV of maxPSS/core and wall time; share of tasks with mixed cores."""
    jobs = finished_jobs(data.jobs)
    cores = pd.to_numeric(jobs["actualcorecount"], errors="coerce").to_numpy(float)
    frame = pd.DataFrame(
        {
            "task": jobs["jeditaskid"].to_numpy(),
            "pss": pd.to_numeric(jobs["maxpss"], errors="coerce").to_numpy(float) / cores,
            "wall": wall_seconds(jobs),
            "cores": cores,
        }
    )
    grouped = frame.groupby("task")
    big = grouped.size() >= min_jobs
    cv = (grouped[["pss", "wall"]].std() / grouped[["pss", "wall"]].mean())[big]
    mixed = grouped["cores"].nunique()[big] > 1
    return {
        "tasks": int(big.sum()),
        "pss_per_core_cv_median": round(float(cv["pss"].median()), 3),
        "wall_cv_median": round(float(cv["wall"].median()), 3),
        "mixed_core_share": round(float(mixed.mean()), 3) if big.any() else None,
    }


def realism_report(data: TaskJobs, settings: Settings, *, per_task: bool) -> dict:
    """Everything above for one side (real or synthetic); ``per_task`` lists each ratio."""
    ratios = scout_ratios(data, settings)
    report: dict = {
        "ratios": {t: summarise(ratios[t]) for t in TARGET_NAMES},
        "within_task": within_task_shape(data),
        "scout_class_agreement": scout_class_agreement(data, settings),
    }
    if per_task:
        report["per_task"] = {
            str(task): {t: _round(ratios.loc[task, t]) for t in TARGET_NAMES}
            for task in ratios.index
        }
    return report


def _round(value: float) -> float | None:
    return None if pd.isna(value) else round(float(value), 3)
