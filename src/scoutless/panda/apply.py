"""Apply a scout_prediction to a task in JEDI's database: the JEDI-side logic, no broker.

One transaction per message, the task row locked (``SELECT … FOR UPDATE``): the columns
change only while the task is still ``defined``/``ready``, not locked by a JEDI process
and still set to run scouts (``US=2``). Then the resource columns get JEDI's integers and
units and the splitRule ``US=1`` (no scouts). ``walltimeunit`` stays NULL so JEDI's own
re-tuning from the first finished jobs still corrects the walltime. A submitter's
``…Fixed`` unit is respected: JEDI never overwrites those values, nor do we.
"""

from __future__ import annotations

import enum
from typing import Any

from sqlalchemy import Engine, select, update
from sqlalchemy.exc import SQLAlchemyError

from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.history.schema import jedi_tasks
from scoutless.jedi.messages import ScoutPrediction
from scoutless.jedi.units import FIXED_UNITS, NO_SCOUT, set_split_rule, uses_scouts
from scoutless.ops.rollout import peek_mode

#: task statuses in which JEDI has not generated jobs yet
PENDING_STATUSES = frozenset({"defined", "ready"})


class Outcome(enum.StrEnum):
    APPLIED = "applied"
    NOT_FOUND = "not_found"
    NOT_PENDING = "not_pending"  # status moved on (scouting, running …)
    LOCKED = "locked"  # a JEDI process holds the task
    SCOUTING = "scouting"  # US is not 2: scouts already decided (or skipped)
    KEEP_SCOUTS = "keep_scouts"  # the prediction itself says scouts should run
    ROLLOUT_SHADOW = "rollout_shadow"  # sent to skip, but the rollout is back in shadow


def decide(row: Any, prediction: ScoutPrediction) -> Outcome:
    """Whether a task row (status, lockedby, splitrule) may take the prediction."""
    if row is None:
        return Outcome.NOT_FOUND
    if row.status not in PENDING_STATUSES:
        return Outcome.NOT_PENDING
    if row.lockedby is not None:
        return Outcome.LOCKED
    if not uses_scouts(row.splitrule):
        return Outcome.SCOUTING
    if not prediction.skip_scout:
        return Outcome.KEEP_SCOUTS
    return Outcome.APPLIED


def new_values(row: Any, prediction: ScoutPrediction) -> dict[str, Any]:
    """Column → value for an applied prediction (fixed units left as the submitter set)."""
    r = prediction.resources
    values: dict[str, Any] = {
        "iointensity": r.io_intensity,
        "iointensityunit": r.io_intensity_unit,
        "walltime": r.walltime,
        "splitrule": set_split_rule(row.splitrule, "US", NO_SCOUT),
    }
    if row.ramunit not in FIXED_UNITS:
        values |= {"ramcount": r.ram_count, "ramunit": r.ram_unit}
    if row.cputimeunit not in FIXED_UNITS:
        values |= {"cputime": r.cpu_time, "cputimeunit": r.cpu_time_unit}
    return values


def apply_prediction(engine: Engine, prediction: ScoutPrediction) -> Outcome:
    """Update the task in one transaction; raises DatabaseUnavailable when it cannot.

    A prediction sent to skip the scouts is not applied once the rollout is back in
    shadow (the kill switch or the guard rail acted after it was published)."""
    if prediction.skip_scout and peek_mode(engine) == "shadow":
        return Outcome.ROLLOUT_SHADOW
    t = jedi_tasks
    cols = (t.c.status, t.c.lockedby, t.c.splitrule, t.c.ramunit, t.c.cputimeunit)
    try:
        with engine.begin() as conn:
            row = conn.execute(
                select(*cols).where(t.c.jeditaskid == prediction.task_id).with_for_update()
            ).first()
            outcome = decide(row, prediction)
            if outcome is Outcome.APPLIED:
                conn.execute(
                    update(t)
                    .where(t.c.jeditaskid == prediction.task_id)
                    .values(**new_values(row, prediction))
                )
            return outcome
    except SQLAlchemyError as exc:
        raise DatabaseUnavailable(f"task {prediction.task_id}: cannot apply: {exc}") from exc
