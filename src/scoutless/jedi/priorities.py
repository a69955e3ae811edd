"""JEDI's job priorities: what a job's ``assignedpriority`` is, from its task's priority.

Source (panda-server, ``pandajedi/jediorder/JobGenerator.py``, ``doGenerate``): a merge job
gets ``mergePriority`` (5000); a scout job ``max(scoutPriority, task currentPriority + 1)``
with ``scoutPriority`` 901; any other job the task's ``currentPriority``; the job's
``currentPriority`` starts equal to its ``assignedPriority`` (``insertNewJob`` keeps it for
production jobs). The dispatcher hands out the highest ``currentPriority`` first, the
lowest PandaID among equals (``getCriteriaForGlobalShares``: ``ORDER BY currentpriority
desc, pandaid asc``).
"""

from __future__ import annotations

from typing import TypeVar

SCOUT_PRIORITY = 901
MERGE_PRIORITY = 5000

P = TypeVar("P")


def job_priority(task_priority: P, scout: object) -> P:
    """``assignedPriority`` of a (non-merge) job of a task at ``task_priority``.

    Arithmetic only, so the same rule serves one job (ints) and a whole history (NumPy
    arrays of task priorities and scout flags) without this layer importing NumPy.
    """
    boosted = task_priority + 1  # type: ignore[operator]
    boosted = boosted + (SCOUT_PRIORITY - boosted) * (boosted < SCOUT_PRIORITY)
    return task_priority + (boosted - task_priority) * scout  # type: ignore[no-any-return]
