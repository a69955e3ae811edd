"""Actuals: the classes tasks really had, computed by the training code, joined to predictions.

A task's actual value comes from :func:`scoutless.targets.estimators.compute_task_targets`
and its class from the serving bundle's :class:`~scoutless.targets.bins.TargetBins`, so a
monitored class means exactly what a training class means. Collection is idempotent: a
task's row per target is replaced, never duplicated, and finished tasks are computed once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pandas as pd
from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Engine,
    Float,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    delete,
    select,
)

from scoutless.config import Settings
from scoutless.features.history import history_keys
from scoutless.history.build import task_history_frame
from scoutless.history.panda_db import read_history
from scoutless.history.store import update_store
from scoutless.ops.prediction_log import PredictionLog, of_the_task
from scoutless.targets.bins import TargetBins
from scoutless.targets.estimators import compute_task_targets

ACTUALS_TABLE = "scoutless_actuals"
#: jedi_tasks.status values after which no job of the task will run any more.
FINISHED_STATUSES: frozenset[str] = frozenset({"done", "finished", "failed", "broken", "aborted"})
_ID_CHUNK = 900

actuals_metadata = MetaData()

actuals_table = Table(
    ACTUALS_TABLE,
    actuals_metadata,
    Column("jeditaskid", BigInteger, nullable=False),
    Column("target", String(32), nullable=False),
    Column("value", Float),
    Column("class_id", Integer, nullable=False),
    Column("collected_at", DateTime, nullable=False),  # UTC, naive
    PrimaryKeyConstraint("jeditaskid", "target", name="scoutless_actuals_pk"),
)

ACTUAL_COLUMNS: list[str] = [c.name for c in actuals_table.columns]


@dataclass(frozen=True)
class CollectResult:
    """What one ``collect`` pass did, for the CLI table and the monitor loop's log line."""

    n_predicted_tasks: int
    n_pending: int
    n_not_finished: int
    n_without_target: int
    n_collected: int


def create_actuals_table(engine: Engine) -> None:
    actuals_metadata.create_all(engine, tables=[actuals_table])


def _utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def read_actuals(engine: Engine, ids: Iterable[int] | None = None) -> pd.DataFrame:
    """Stored actuals (all, or of the given task ids)."""
    create_actuals_table(engine)
    stmt = select(actuals_table)
    if ids is not None:
        stmt = stmt.where(actuals_table.c.jeditaskid.in_([int(i) for i in ids]))
    with engine.connect() as conn:
        frame = pd.DataFrame(conn.execute(stmt).fetchall(), columns=ACTUAL_COLUMNS)
    return frame


def actual_classes(
    targets: pd.DataFrame, bins: dict[str, TargetBins], collected_at: datetime
) -> pd.DataFrame:
    """Long frame (jeditaskid, target, value, class_id, collected_at) of classifiable values."""
    parts = []
    for target, target_bins in bins.items():
        if target not in targets.columns:
            continue
        values = targets[target].to_numpy(dtype=float)
        part = pd.DataFrame(
            {
                "jeditaskid": targets.index.to_numpy(dtype=np.int64),
                "target": target,
                "value": values,
                "class_id": target_bins.classify(values),
            }
        )
        parts.append(part[part["class_id"] >= 0])
    if not parts:
        return pd.DataFrame(columns=ACTUAL_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    out["collected_at"] = collected_at
    return out[ACTUAL_COLUMNS]


def finished_task_ids(tasks: pd.DataFrame) -> set[int]:
    """Tasks whose status is final; a history without statuses counts every task as final."""
    status = tasks["status"] if "status" in tasks.columns else pd.Series(None, index=tasks.index)
    final = status.isna() | status.astype(str).str.lower().isin(FINISHED_STATUSES)
    return set(tasks.loc[final, "jeditaskid"].astype(int))


def store_actuals(engine: Engine, rows: pd.DataFrame) -> int:
    """Replace the rows of these (task, target) pairs in one transaction."""
    if rows.empty:
        return 0
    create_actuals_table(engine)
    records = rows[ACTUAL_COLUMNS].astype(object).to_dict("records")
    for rec in records:
        rec["jeditaskid"] = int(rec["jeditaskid"])
        rec["class_id"] = int(rec["class_id"])
        rec["value"] = float(rec["value"])
    ids = sorted({r["jeditaskid"] for r in records})
    targets = sorted({r["target"] for r in records})
    with engine.begin() as conn:
        for start in range(0, len(ids), _ID_CHUNK):
            chunk = ids[start : start + _ID_CHUNK]
            conn.execute(
                delete(actuals_table).where(
                    actuals_table.c.jeditaskid.in_(chunk), actuals_table.c.target.in_(targets)
                )
            )
        conn.execute(actuals_table.insert(), records)
    return len(records)


def collect_actuals(
    engine: Engine,
    bins: dict[str, TargetBins],
    *,
    settings: Settings,
    recollect: bool = False,
    log_engine: Engine | None = None,
    update_history: bool = True,
) -> CollectResult:
    """Compute and store the actual classes of predicted tasks whose jobs have finished.

    ``engine`` holds the PanDA history; ``log_engine`` the prediction log (default: the same
    database). Tasks already collected for every target are skipped unless ``recollect``.
    Newly collected tasks also update the history-feature store in ``engine``
    (``update_history``; never on a recollect, which would count them twice).
    """
    log = PredictionLog(log_engine or engine)
    predicted = log.task_ids()
    done: set[int] = set()
    if not recollect:
        stored = read_actuals(log_engine or engine, predicted)
        per_task = stored.groupby("jeditaskid")["target"].nunique()
        done = set(per_task[per_task >= len(bins)].index.astype(int))
    pending = [int(i) for i in predicted if int(i) not in done]
    if not pending:
        return CollectResult(len(predicted), 0, 0, 0, 0)

    history = read_history(engine, pending)
    finished = finished_task_ids(history.tasks)
    jobs = history.jobs[history.jobs["jeditaskid"].isin(finished)]
    tasks = history.tasks[history.tasks["jeditaskid"].isin(finished)]
    values = compute_task_targets(jobs, tasks, settings=settings)
    rows = actual_classes(values, bins, _utcnow())
    n_stored = store_actuals(log_engine or engine, rows)
    if update_history and not recollect and len(values):
        finished_tasks = task_history_frame(tasks, jobs, values)
        keys = history_keys(list(tasks.columns))
        update_store(engine, finished_tasks, keys, list(bins), settings.history)
    n_with_target = rows["jeditaskid"].nunique() if n_stored else 0
    return CollectResult(
        n_predicted_tasks=len(predicted),
        n_pending=len(pending),
        n_not_finished=len(pending) - len(finished & set(pending)),
        n_without_target=len(finished & set(pending)) - n_with_target,
        n_collected=n_with_target,
    )


def join_predictions(predictions: pd.DataFrame, actuals: pd.DataFrame) -> pd.DataFrame:
    """Predictions with their task's actual class, the latest prediction per (task, target).

    The latest one is what the scheduler acted on; tasks without an actual yet are left out,
    and so are rows whose features a caller posted (:func:`of_the_task`).
    Adds ``actual_class`` and ``actual_value``; ``class_id`` stays the predicted class.
    """
    known = of_the_task(predictions).dropna(subset=["jeditaskid"]).copy()
    if known.empty or actuals.empty:
        return known.iloc[:0].assign(actual_class=0, actual_value=0.0)
    known["jeditaskid"] = known["jeditaskid"].astype(np.int64)
    latest = known.sort_values(["created_at", "id"]).drop_duplicates(
        ["jeditaskid", "target"], keep="last"
    )
    truth = actuals.rename(columns={"class_id": "actual_class", "value": "actual_value"})
    truth = truth[["jeditaskid", "target", "actual_class", "actual_value"]].astype(
        {"jeditaskid": np.int64, "actual_class": int}
    )
    return latest.merge(truth, on=["jeditaskid", "target"], how="inner")
