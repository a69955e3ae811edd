"""Job rows in partitions of whole tasks: from the database by task-id ranges, or from a
Parquet export shuffled by task.

Either way a worker ends up with one :class:`HistoryPart`: every task of an id range with
all its parameters, datasets, jobs (and the synthetic truth, when there is one), which is
what :func:`scoutless.history.build.task_rows` needs to be exact for those tasks.

A Parquet export is a folder with one sub-folder of ``*.parquet`` files per PanDA table,
columns named as in :mod:`scoutless.history.schema`::

    export/jedi_tasks/  export/jedi_taskparams/  export/jedi_datasets/  export/jobsarchived4/
    export/scoutless_synthetic_truth/   (optional: the generator's latent truth)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from scoutless.history.build import TruthReader
from scoutless.history.panda_db import History, make_engine, read_history, task_ids
from scoutless.history.validation import BadRowsError

if TYPE_CHECKING:
    from dask.delayed import Delayed
    from sqlalchemy import Engine

#: the synthetic generator's latent truth in an export (optional; a DB has it as a table)
TRUTH_FOLDER = "scoutless_synthetic_truth"
#: latent truth rows + bins -> class probabilities per target (LatentTruth.probabilities)
Probabilities = Callable[[pd.DataFrame, dict], dict]

EXPORT_TABLES: dict[str, str] = {
    "tasks": "jedi_tasks",
    "taskparams": "jedi_taskparams",
    "datasets": "jedi_datasets",
    "jobs": "jobsarchived4",
}


class ExportError(ValueError):
    """A Parquet export folder that lacks a table or its key column."""


@dataclass
class HistoryPart:
    """All rows of one partition's tasks, and their latent truth rows if the history is
    synthetic (indexed by jeditaskid)."""

    history: History
    truth: pd.DataFrame | None


@dataclass(frozen=True)
class Partitions:
    """Delayed :class:`HistoryPart` per partition, in ascending task-id order, and the
    function turning truth rows into class probabilities when there is a truth."""

    parts: list[Delayed]
    n_tasks: int
    probabilities: Probabilities | None = None


def partition_bounds(n_items: int, per_partition: int) -> list[tuple[int, int]]:
    """(start, stop) positions of consecutive slices of at most ``per_partition`` items."""
    return [(lo, min(lo + per_partition, n_items)) for lo in range(0, n_items, per_partition)]


# --------------------------------------------------------------------------- database


@functools.lru_cache(maxsize=4)
def _engine(url: str) -> Engine:
    """One engine per worker process and URL (engines do not travel between processes)."""
    return make_engine(url, read_only=True)


def read_db_part(url: str, ids: list[int], read_truth: TruthReader | None) -> HistoryPart:
    """Runs on a worker: the tasks ``ids`` with their rows, read as the single path reads."""
    engine = _engine(url)
    truth = read_truth(engine, ids) if read_truth is not None else None
    return HistoryPart(read_history(engine, ids), None if truth is None else truth.frame)


def db_partitions(
    url: str,
    per_partition: int,
    since: datetime | None = None,
    read_truth: TruthReader | None = None,
) -> Partitions:
    """Partitions of ``per_partition`` consecutive task ids, each read by a worker.

    ``read_truth`` (a module-level function: workers import it) adds the latent truth of a
    synthetic history, as in :func:`~scoutless.history.build.build_table_from_db`."""
    from dask import delayed

    engine = make_engine(url, read_only=True)
    ids = task_ids(engine, since=since)
    if not ids:
        raise BadRowsError(f"no tasks in jedi_tasks{f' created since {since}' if since else ''}")
    probe = read_truth(engine, ids[:1]) if read_truth is not None else None
    reader = read_truth if probe is not None else None
    read = delayed(read_db_part, pure=True)
    parts = [read(url, ids[lo:hi], reader) for lo, hi in partition_bounds(len(ids), per_partition)]
    return Partitions(parts, len(ids), None if probe is None else probe.probabilities)


# --------------------------------------------------------------------------- parquet export


def _check_export(folder: Path, with_truth: bool) -> dict[str, Path]:
    tables = {key: folder / name for key, name in EXPORT_TABLES.items()}
    missing = [str(p) for p in tables.values() if not any(p.glob("*.parquet"))]
    if missing:
        raise ExportError(f"Parquet export {folder}: no *.parquet files in {missing}")
    truth = folder / TRUTH_FOLDER
    if with_truth and any(truth.glob("*.parquet")):
        tables["truth"] = truth
    return tables


def task_divisions(ids: np.ndarray, per_partition: int) -> list[int]:
    """Sorted, unique task-id boundaries giving ``per_partition`` tasks per partition."""
    ids = np.unique(ids)
    if ids.size == 0:
        raise BadRowsError("no tasks in jedi_tasks")
    starts = [int(ids[lo]) for lo, _ in partition_bounds(len(ids), per_partition)]
    return [*starts, int(ids[-1])] if len(starts) == 1 or starts[-1] != ids[-1] else starts


def assemble_part(
    tasks: pd.DataFrame,
    taskparams: pd.DataFrame,
    datasets: pd.DataFrame,
    jobs: pd.DataFrame,
    truth: pd.DataFrame | None = None,
) -> HistoryPart:
    """Runs on a worker: one partition's frames (indexed by jeditaskid) as a History."""
    history = History(
        tasks=tasks.reset_index(),
        taskparams=taskparams["taskparams"],
        datasets=datasets.reset_index(),
        jobs=jobs.reset_index(),
    )
    return HistoryPart(history, truth)


def export_partitions(
    folder: Path, per_partition: int, probabilities: Probabilities | None = None
) -> Partitions:
    """Every table of the export shuffled by task into the same task-id ranges.

    With ``probabilities`` an exported latent truth (``TRUTH_FOLDER``) is read too."""
    import dask.dataframe as dd
    from dask import delayed

    tables = _check_export(Path(folder), with_truth=probabilities is not None)
    ids = dd.read_parquet(tables["tasks"], columns=["jeditaskid"])["jeditaskid"].compute()
    divisions = task_divisions(ids.to_numpy(), per_partition)
    by_task = {}
    for key, path in tables.items():
        frame = dd.read_parquet(path)
        if "jeditaskid" not in frame.columns:
            raise ExportError(f"Parquet export {path}: no jeditaskid column")
        by_task[key] = frame.set_index("jeditaskid", divisions=divisions).to_delayed()
    assemble = delayed(assemble_part, pure=True)
    parts = [assemble(*(by_task[key][i] for key in tables)) for i in range(len(divisions) - 1)]
    return Partitions(parts, int(ids.nunique()), probabilities if "truth" in tables else None)


def write_export(frames: dict[str, pd.DataFrame], folder: Path, part: int) -> None:
    """Append one file per table (keys as in EXPORT_TABLES, plus 'truth') to an export."""
    names = {**EXPORT_TABLES, "truth": TRUTH_FOLDER}
    for key, frame in frames.items():
        out = Path(folder) / names[key]
        out.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(out / f"part-{part:05d}.parquet", index=False)
