"""The job follower forgets a task JEDI ended (``job_follower.forget_statuses``: finished,
done, failed, broken, aborted), or one none of whose jobs it handled for
``forget_idle_s``: the task is recorded in ``scoutless_job_forgotten`` (its jobs are left
unread: ``job_reads.job_pages``), its types leave the sizer's memory and are not
restored (``PersistentSizer.drop`` and its ``skip``), and its ledger and state rows stay,
for ``scoutless online status`` and an audit. A follower of months of tasks holds the
running ones only."""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import Engine, insert

from scoutless.config import JobFollowerSettings
from scoutless.ops.prediction_log import utcnow
from scoutless.panda import job_outcomes as jo
from scoutless.panda import job_tables as jt
from scoutless.panda.job_reads import tasks_to_forget
from scoutless.sizing.persistent import PersistentSizer

log = logging.getLogger("scoutless.panda.job_forget")


def forget_ended(engine: Engine, s: JobFollowerSettings, sizer: PersistentSizer,
                 forgotten: set[int]) -> dict[int, str]:  # fmt: skip
    """Record the tasks to forget now, add them to ``forgotten`` (what the sizer's ``skip``
    reads) and drop their types; the tasks forgotten now and why."""
    idle = utcnow() - timedelta(seconds=s.forget_idle_s) if s.forget_idle_s else None
    with engine.begin() as conn:
        ended = tasks_to_forget(conn, s.forget_statuses, idle)
        if ended:
            conn.execute(insert(jt.forgotten), [
                {"jeditaskid": task, "reason": why, "forgotten_at": utcnow()}
                for task, why in ended.items()
            ])  # fmt: skip
    forgotten |= set(ended)
    sizer.drop([k for k in list(sizer.versions) if jo.task_of(k) in ended])
    for task, why in ended.items():
        log.info("task %s forgotten (%s): its jobs are left unread", task, why)
    return ended
