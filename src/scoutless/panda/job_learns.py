"""What one ended job teaches the job follower's sizer, by type key: its memory's outcome
(``job_outcomes.outcome``) for ``panda:<task>:<kind>`` and its time's
(``job_times.time_outcome``) for ``panda:<task>:<kind>:walltime``, each type started from
its prior when first seen. The follower commits them together (``PersistentSizer.learn``'s
``more``)."""

from __future__ import annotations

from scoutless.config import Settings
from scoutless.panda import job_outcomes as jo
from scoutless.panda import job_times as jtm
from scoutless.panda.job_reads import Task
from scoutless.sizing.features import Release
from scoutless.sizing.online import OnlineSizer
from scoutless.sizing.persistent import PersistentSizer
from scoutless.sizing.protocol import Outcome


def job_learns(sizer: PersistentSizer, settings: Settings, row: jo.JobRow, kind: str,
               why: jo.Cause, task: Task, power: float | None
               ) -> list[tuple[str, Release, Outcome]]:  # fmt: skip
    """The job's outcomes by type key (each type seeded; none: nothing to learn)."""
    s, features, out = settings.job_follower, Release(cores=row.cores), []
    memory = jo.outcome(row, task.base_mb, frozenset(s.memory_pilot_codes))
    if memory is not None:
        key = jo.type_key(row.jeditaskid, kind)
        if task.ramcount:
            needs = jo.prior_needs(task.ramcount, task.cores, task.base_mb, s.prior_points,
                                   s.prior_spread)  # fmt: skip
            seed(sizer, settings, key, task, needs, {"ramcount": task.ramcount})
        out.append((key, features, memory))
    timed = jtm.time_outcome(row, why, task, power)
    if timed is not None:
        key = jtm.time_key(row.jeditaskid, kind)
        needs = jtm.prior_needs(task, s.prior_points, s.prior_spread)
        prior = {"cputime": task.cputime, "unit": task.cputimeunit}
        seed(sizer, settings, key, task, needs, prior)
        out.append((key, features, timed))
    return out


def seed(sizer: PersistentSizer, settings: Settings, key: str, task: Task, needs: list[float],
         prior: dict) -> None:  # fmt: skip
    """A type never learnt starts from the task's value in force: for memory its
    ramCount (the submission's answer, an allocation: a high quantile of its jobs' need,
    JEDI's P75 × 1.1 or the bundle's policy) as the P90 of a log-normal need of spread
    ``prior_spread``, held as ``prior_points`` equally likely outcomes of the need it allows
    (compensated, per core); for time its cpuTime, the same way (no cpuTime: no points, the
    type starts from its jobs). Its points are borrowed: they leave once the type has
    ``sizing.own_replaces_borrowed`` successes of its own, as JEDI's scouts replace the
    submission's value (a prior far from the jobs' would otherwise widen their spread for
    good: jobs at 360 HS06·s per event under a cpuTime at 100 got 1,351 after 8 jobs, 379
    with the points gone; jobs at ~2,650 MB a core under a ramCount of 2,000 got 4,919 MB
    after 100 jobs, 2,735 with the points gone). The prior is the type's version 1."""
    if key in sizer.versions:
        return
    sizer.refresh(force=True)  # another process may have started it
    if key in sizer.versions:
        return
    start = OnlineSizer(settings.sizing)  # a state is data: the same for any price
    weight = task.cores if key.endswith(jtm.WALLTIME_SUFFIX) else 1.0
    start.start_type(key, [Release(cores=task.cores)] * len(needs), needs,
                     [weight] * len(needs), borrowed=True, pseudo=True)  # fmt: skip
    prior |= {"points": len(needs), "spread": settings.job_follower.prior_spread,
              "borrowed": True}  # fmt: skip
    sizer.store.append(key, 0, {"prior": True}, prior, start.snapshot(key))
    sizer.refresh(force=True)
