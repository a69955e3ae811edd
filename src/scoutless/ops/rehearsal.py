"""A replayed canary written as PanDA's own records: ``scoutless replay --write-history``.

What the replay simulated becomes what production would have left behind, in PanDA's
tables and scoutless's log, so ``monitor impact`` (and its guard rail) run on data whose
truth is known, and an operator reads the report before switching anything on:

* ``jedi_tasks`` / ``jedi_taskparams`` / ``jedi_datasets``: the replayed tasks' own rows,
  with the status the replay ended them in and the ramCount and cpuTime they ended with
  (cpuTime in mHS06sPerEvent, PanDA's unit for small values: ``cputime`` is an integer);
* ``jobsarchived4``: one row per attempt (new ``pandaid``, ``attemptnr``, ``parentid`` the
  failed attempt), with its times, pilot error code (the first memory / walltime code of
  ``Settings.rollout``), maxPSS, and its allocation as PanDA records it
  (``minramcount``, ``maxwalltime``, ``maxcpucount``); scouts carry ``sj``;
* ``scoutless_task_predictions``: each task's prediction (memory and cputime values,
  harm included) with its arm and the arm's reason, logged at the task's creation;
* ``scoutless_rollout``: the canary (share, seed), where the database holds no rollout yet.

Times are shifted so the last attempt ends now (the impact's windows look back from now);
every difference between arms is unchanged by the shift. A database that already holds any
of the tasks is refused (nothing overwritten). The rows go task rows first and the log last:
``monitor impact`` reads only logged tasks, so an interrupted write is refused on a rerun
and never half-counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pandas as pd
from sqlalchemy import Engine, func, select

from scoutless.config import Settings
from scoutless.history.db_write import bulk_insert
from scoutless.history.panda_db import create_schema, id_chunks, make_engine, read_history
from scoutless.history.schema import jedi_tasks, jobsarchived4
from scoutless.ops.prediction_log import PredictionLog
from scoutless.ops.rollout import peek_mode, set_rollout
from scoutless.replay import rules
from scoutless.replay.canary import Rehearsal
from scoutless.replay.result import BROKEN, EXHAUSTED
from scoutless.targets.bins import TargetBins


class RehearsalError(ValueError):
    """The replayed canary cannot be written there (names the table or the option)."""


@dataclass(frozen=True)
class Written:
    tasks: int
    jobs: int
    predictions: int
    rollout: str  # what was done about the rollout row
    span_days: int  # days from the first task's creation to now: ``monitor impact --days``


def write_rehearsal(
    rehearsal: Rehearsal,
    source_url: str,
    target_url: str,
    settings: Settings,
    *,
    bins: Mapping[str, TargetBins] | None = None,
    now: datetime | None = None,
) -> Written:
    """Write the replayed canary into ``target_url`` (created if new)."""
    if rehearsal.result.attempt_log is None:
        raise RehearsalError("the canary was replayed without recording its attempts")
    work = rehearsal.work
    ids = work.task_ids.tolist()
    source = make_engine(source_url, read_only=True)
    try:
        history = read_history(source, ids, with_jobs=False)
    finally:
        source.dispose()
    target = make_engine(target_url)
    try:
        create_schema(target)
        _refuse_overlap(target, ids)
        origin = pd.to_datetime(history.tasks["creationdate"]).min()
        log = rehearsal.result.attempt_log
        last = float(log.end_s.max()) if len(log.end_s) else 0.0
        moment = pd.Timestamp(now or datetime.now(UTC)).tz_localize(None).floor("s")
        zero = moment - pd.to_timedelta(round(last), unit="s")
        shift = zero - origin
        tasks = _task_rows(history.tasks, rehearsal, zero)
        bulk_insert(target, "jedi_tasks", tasks)
        bulk_insert(
            target, "jedi_taskparams", history.taskparams.rename("taskparams").reset_index()
        )
        datasets = history.datasets.copy()
        for column in ("creationtime", "modificationtime"):
            datasets[column] = pd.to_datetime(datasets[column]) + shift
        bulk_insert(target, "jedi_datasets", datasets)
        jobs = _job_rows(rehearsal, zero, _next_pandaid(target), settings)
        bulk_insert(target, "jobsarchived4", jobs)
        logged = PredictionLog(target).write(_log_rows(rehearsal, tasks, bins))
        rollout = _rollout(target, rehearsal)
    finally:
        target.dispose()
    span = math.ceil((moment - zero).total_seconds() / 86_400.0) + 1
    return Written(len(tasks), len(jobs), logged, rollout, span)


def _refuse_overlap(engine: Engine, ids: list[int]) -> None:
    held = 0
    with engine.connect() as conn:
        for chunk in id_chunks(ids):
            stmt = select(func.count()).where(jedi_tasks.c.jeditaskid.in_(chunk))
            held += int(conn.execute(stmt.select_from(jedi_tasks)).scalar() or 0)
    if held:
        raise RehearsalError(
            f"{engine.url.render_as_string(hide_password=True)}: jedi_tasks already holds "
            f"{held} of the {len(ids)} replayed tasks; write into a new database (nothing "
            "was written)"
        )


def _next_pandaid(engine: Engine) -> int:
    with engine.connect() as conn:
        top = conn.execute(select(func.max(jobsarchived4.c.pandaid))).scalar()
    return int(top or 0) + 1


def _status(rehearsal: Rehearsal) -> np.ndarray:
    """PanDA's task status for the replay's end: done, finished (some jobs failed), failed
    (all did), broken, exhausted."""
    result, work = rehearsal.result, rehearsal.work
    failed = np.bincount(work.task, weights=result.failed, minlength=work.n_tasks)
    status = np.where(failed == 0, "done", np.where(failed < work.n_units, "finished", "failed"))
    status = np.where(result.status == BROKEN, "broken", status)
    return np.where(result.status == EXHAUSTED, "exhausted", status).astype(object)


def _integers(values: np.ndarray) -> pd.array:
    return pd.array(np.where(np.isfinite(values), np.round(values), np.nan), dtype="Int64")


def _task_rows(source: pd.DataFrame, rehearsal: Rehearsal, zero: pd.Timestamp) -> pd.DataFrame:
    """The tasks' own rows, ended as the replay ended them."""
    work, result = rehearsal.work, rehearsal.result
    rows = source.set_index("jeditaskid").reindex(work.task_ids).reset_index()
    created = zero + pd.to_timedelta(work.submit_s, unit="s")
    log = result.attempt_log
    assert log is not None
    last_end = np.full(work.n_tasks, np.nan)
    np.fmax.at(last_end, work.task[log.unit], log.end_s)
    ended = zero + pd.to_timedelta(np.fmax(last_end, work.submit_s), unit="s")
    rows["creationdate"], rows["modificationtime"] = created, ended
    rows["status"] = _status(rehearsal)
    rows["ramcount"], rows["ramunit"] = _integers(result.final_ram), "MBPerCore"
    rows["cputime"] = _integers(result.final_cputime * 1000.0)
    rows["cputimeunit"] = "mHS06sPerEvent"
    rows["lockedby"], rows["lockedtime"] = None, None
    return rows


def _job_rows(
    rehearsal: Rehearsal, zero: pd.Timestamp, first_id: int, settings: Settings
) -> pd.DataFrame:
    """One jobsarchived4 row per attempt, in (unit, attempt) order."""
    work = rehearsal.work
    log = rehearsal.result.attempt_log
    assert log is not None
    order = np.lexsort((log.attempt, log.unit))
    unit, attempt = log.unit[order], log.attempt[order]
    task = work.task[unit]
    pandaid = first_id + np.arange(len(order), dtype=np.int64)
    parent = np.where(attempt > 1, pandaid - 1, np.nan)  # the previous row: the same unit's
    ok = log.outcome[order] == rules.SUCCESS
    codes = settings.rollout
    code = np.select(
        [log.outcome[order] == rules.MEMORY_KILL, log.outcome[order] == rules.WALLTIME_KILL],
        [codes.memory_kill_codes[0], codes.walltime_kill_codes[0]], 0,
    )  # fmt: skip
    start, end = log.start_s[order], log.end_s[order]
    cores = work.cores[unit]

    def at(seconds: np.ndarray) -> pd.Series:
        return pd.Series(zero + pd.to_timedelta(seconds, unit="s"))

    return pd.DataFrame({
        "pandaid": pandaid, "modificationtime": at(end), "jeditaskid": work.task_ids[task],
        "jobstatus": np.where(ok, "finished", "failed"),
        "specialhandling": np.where(rehearsal.unit_is_scout[unit], "sj", None),
        "attemptnr": attempt, "parentid": _integers(parent),
        "creationtime": at(log.queued_s[order]), "starttime": at(start), "endtime": at(end),
        "piloterrorcode": code, "corecount": cores.astype(np.int64),
        "maxpss": np.round(work.need_mb[unit] * 1024.0).astype(np.int64),
        "cpuconsumptiontime": (end - start) * cores * work.cpu_efficiency[task] / 100.0,
        "nevents": np.where(ok, work.nevents[unit], 0).astype(np.int64),
        "hs06": np.round(work.core_power[unit] * cores).astype(np.int64),
        "computingsite": "REPLAY",
        "minramcount": np.round(log.alloc_mb[order]).astype(np.int64),
        "maxwalltime": _integers(log.limit_s[order]), "maxcpucount": _integers(log.limit_s[order]),
    })  # fmt: skip


def _log_rows(
    rehearsal: Rehearsal, tasks: pd.DataFrame, bins: Mapping[str, TargetBins] | None
) -> list[dict]:
    """Each task's prediction as the listener logs it: values, classes, arm and reason."""
    meta = rehearsal.meta
    values = {"memory": rehearsal.predicted_ram, "cputime": rehearsal.predicted_cputime}
    classes = {
        target: bins[target].classify(v) if bins and target in bins else np.full(len(v), -1)
        for target, v in values.items()
    }

    def entry(target: str, i: int) -> dict:
        k = int(classes[target][i])
        label = bins[target].labels[k] if bins and target in bins and k >= 0 else None
        value = float(values[target][i])
        return {"class_id": k, "class_label": label, "probabilities": [],
                "recommended_value": value if np.isfinite(value) else None}  # fmt: skip

    created = pd.to_datetime(tasks["creationdate"]).dt.to_pydatetime()
    version = str(meta.get("bundle") or "replay")
    return [
        {"request_id": f"replay:{version}", "jeditaskid": int(tid), "model_version": version,
         "policy": str(meta.get("policy")), "alpha": meta.get("alpha"),
         "arm": str(rehearsal.arms[i]), "arm_reason": str(rehearsal.reasons[i]),
         "created_at": created[i], "predictions": {t: entry(t, i) for t in values}}
        for i, tid in enumerate(rehearsal.work.task_ids.tolist())
    ]  # fmt: skip


def _rollout(engine: Engine, rehearsal: Rehearsal) -> str:
    """Record the canary the replay ran, unless the database holds a rollout already."""
    meta = rehearsal.meta
    mode = peek_mode(engine)
    if mode is not None:
        return f"left the rollout in force ({mode})"
    state = set_rollout(
        engine, "canary", share=float(meta["share"]), seed=int(meta["seed"]),
        reason="replay --write-history: the canary it replayed", changed_by="replay",
    )  # fmt: skip
    return f"recorded the rollout: {state.describe()}"
