"""Task and job priorities, written as PanDA records them.

Production tasks draw a ``taskpriority`` from a few levels (the synthetic world's choice:
most routine work in the middle, a tenth urgent); an analysis task has 1000, the value
``AtlasAnalTaskRefiner`` gives a user task outside 900-1100. ``currentpriority`` equals
``taskpriority`` (no JEDI boost is replayed into the history). A job's ``assignedpriority``
and ``currentpriority`` follow JEDI's JobGenerator (:mod:`scoutless.jedi.priorities`).
A separate random stream draws them, so adding them changed no other generated column.
"""

from __future__ import annotations

import numpy as np

from scoutless.jedi.priorities import job_priority

PRODUCTION_LEVELS = (300, 500, 700, 900)
PRODUCTION_WEIGHTS = (0.2, 0.45, 0.25, 0.1)
USER_PRIORITY = 1000


def task_priorities(rng: np.random.Generator, is_user: np.ndarray) -> np.ndarray:
    """``taskpriority`` per task."""
    drawn = rng.choice(PRODUCTION_LEVELS, size=len(is_user), p=PRODUCTION_WEIGHTS)
    return np.where(is_user, USER_PRIORITY, drawn).astype(np.int64)


def job_priorities(task_priority: np.ndarray, task: np.ndarray, scout: np.ndarray) -> np.ndarray:
    """``assignedpriority`` per job row (``task``: its task's index; ``scout``: flagged)."""
    return np.asarray(job_priority(task_priority[task], np.asarray(scout, dtype=bool)))
