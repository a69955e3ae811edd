"""A history's unusable rows, found and reported: every excluded job or task is listed in a
:class:`BadRowReport` with its task id, job id and reason (``strict`` raises
:class:`BadRowsError` with :func:`strict_message` instead). Nothing is dropped silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from scoutless.history.panda_db import History
from scoutless.targets.estimators import wall_seconds


class BadRowsError(ValueError):
    """Raised under ``strict``: the history has rows that cannot be used."""


@dataclass
class BadRowReport:
    """Excluded rows: one record per job or task with the reason it could not be used."""

    rows: list[dict[str, object]] = field(default_factory=list)

    def add(self, frame: pd.DataFrame, table: str, reason: str) -> None:
        for rec in frame.to_dict("records"):
            self.rows.append(
                {
                    "table": table,
                    "jeditaskid": rec.get("jeditaskid"),
                    "pandaid": rec.get("pandaid"),
                    "reason": reason,
                }
            )

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["table", "jeditaskid", "pandaid", "reason"])

    def counts(self) -> dict[str, int]:
        if not self.rows:
            return {}
        return self.frame().groupby(["table", "reason"]).size().rename(None).to_dict()  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self.rows)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        self.frame().to_csv(path, index=False)
        return path


def _job_problems(jobs: pd.DataFrame) -> list[tuple[pd.Series, str]]:
    """(mask, reason) for each kind of unusable job; only finished jobs are held to them."""
    finished = jobs["jobstatus"].eq("finished")
    wall = pd.Series(wall_seconds(jobs), index=jobs.index)
    numeric = {
        c: pd.to_numeric(jobs[c], errors="coerce")
        for c in ("maxpss", "nevents", "inputfilebytes", "outputfilebytes", "actualcorecount")
    }
    return [
        (finished & (jobs["starttime"].isna() | jobs["endtime"].isna()), "missing start/end time"),
        (finished & (wall < 0), "endtime before starttime"),
        (finished & numeric["maxpss"].isna(), "missing maxpss"),
        (numeric["maxpss"] < 0, "negative maxpss"),
        (numeric["nevents"] < 0, "negative nevents"),
        ((numeric["inputfilebytes"] < 0) | (numeric["outputfilebytes"] < 0), "negative bytes"),
        (numeric["actualcorecount"] < 0, "negative core count"),
    ]


def _task_problems(tasks: pd.DataFrame, taskparams: pd.Series) -> list[tuple[pd.Series, str]]:
    corecount = pd.to_numeric(tasks["corecount"], errors="coerce")

    def bad_json(raw: object) -> bool:
        if raw is None or (isinstance(raw, float) and np.isnan(raw)):
            return False
        try:
            return not isinstance(json.loads(raw), dict)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return True

    params = tasks["jeditaskid"].map(taskparams) if len(taskparams) else None
    problems = [
        (tasks["creationdate"].isna(), "missing creationdate"),
        (corecount.notna() & (corecount <= 0), "non-positive corecount"),
    ]
    if params is not None:
        problems.append((params.map(bad_json).astype(bool), "taskparams is not a JSON object"))
    return problems


def _exclude(
    frame: pd.DataFrame, problems: list[tuple[pd.Series, str]], table: str, report: BadRowReport
) -> pd.DataFrame:
    bad = pd.Series(False, index=frame.index)
    for mask, reason in problems:
        mask = mask.fillna(False).astype(bool) & ~bad  # report each row once, first reason
        if mask.any():
            report.add(frame[mask], table, reason)
        bad |= mask
    return frame[~bad]


def validate_history(history: History, report: BadRowReport) -> History:
    """History without the rows that cannot be used; each excluded row lands in ``report``."""
    tasks = _exclude(
        history.tasks, _task_problems(history.tasks, history.taskparams), "jedi_tasks", report
    )
    jobs = history.jobs[history.jobs["jeditaskid"].isin(tasks["jeditaskid"])]
    jobs = _exclude(jobs, _job_problems(jobs), "jobsarchived4", report)
    kept = tasks["jeditaskid"]
    params = history.taskparams[history.taskparams.index.isin(kept)]
    datasets = history.datasets[history.datasets["jeditaskid"].isin(kept)]
    return History(tasks, params, datasets, jobs)


def strict_message(report: BadRowReport, shown: int = 10) -> str:
    lines = [f"{len(report)} bad rows (--strict):"]
    for row in report.rows[:shown]:
        where = f"task {row['jeditaskid']}"
        if row["pandaid"] is not None and not pd.isna(row["pandaid"]):
            where += f", job {row['pandaid']}"
        lines.append(f"  {row['table']}: {where}: {row['reason']}")
    if len(report) > shown:
        lines.append(f"  … and {len(report) - shown} more")
    return "\n".join(lines)
