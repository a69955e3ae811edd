"""Shared pieces of the synthetic-generator tests: targets and features of generated frames."""

from __future__ import annotations

import numpy as np
import pandas as pd

from scoutless.config import Settings
from scoutless.features.extract import task_features
from scoutless.history.synthetic import Frames
from scoutless.targets.estimators import compute_task_targets


def targets_of(frames: Frames) -> pd.DataFrame:
    """Targets through the project's one target code (jeditaskid index, tasks' order)."""
    values = compute_task_targets(frames.jobs, frames.tasks, settings=Settings())
    return values.reindex(frames.tasks["jeditaskid"].to_numpy())


def features_of(frames: Frames) -> pd.DataFrame:
    params = frames.taskparams.set_index("jeditaskid")["taskparams"]
    return task_features(frames.tasks, params, frames.datasets)


def within_task_cv(task: np.ndarray, values: np.ndarray, min_jobs: int = 50) -> np.ndarray:
    frame = pd.DataFrame({"task": task, "v": values})
    grouped = frame.groupby("task")["v"]
    cv = grouped.std() / grouped.mean()
    return cv[grouped.size() >= min_jobs].to_numpy()
