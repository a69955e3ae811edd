"""History → partitioned training table on a Dask cluster, equal to the single-process table.

Two passes over the partitions, each a plain function on one partition of whole tasks:

1. :func:`stage_rows` — :func:`~scoutless.history.build.task_rows` (validation, the same
   target estimators and feature extraction), written to a staging file; only the columns
   bins and splits need (task id, creation date, target values) go back to the client;
2. on the client, once: bins with their recommendations and the splits, by the same
   functions as the single path, over all tasks;
3. :func:`stage_finish` — classes, Bayes classes and split columns, one ``part-NNNNN``
   file per partition.

The output folder appears complete or not at all (:func:`atomic_folder`); a worker lost
mid-build has its partitions recomputed by Dask, and any error leaves no table behind.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from scoutless.atomic import atomic_folder
from scoutless.config import Settings
from scoutless.distributed.sources import HistoryPart, Partitions, Probabilities
from scoutless.features.spec import PANDA_FEATURES
from scoutless.history.build import (
    BINS_SPLIT,
    LatentTruth,
    fit_splits_and_bins,
    label_rows,
    task_rows,
)
from scoutless.history.table import SPLIT_COLUMNS, table_metadata, write_common_metadata
from scoutless.history.validation import BadRowReport, BadRowsError, strict_message
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import TARGET_NAMES, class_col, scout_class_col, value_col

if TYPE_CHECKING:
    from distributed import Client

SLIM_COLUMNS = ["jeditaskid", "creationdate", *(value_col(t) for t in TARGET_NAMES)]
SPLIT_NAMES = list(SPLIT_COLUMNS.values())
ProgressCallback = Callable[[str, int, int], None]


@dataclass
class StageRows:
    """What pass 1 returns per partition: the slim columns, bad rows, row counts."""

    slim: pd.DataFrame
    bad_rows: list[dict[str, object]]
    n_tasks: int
    n_jobs: int


@dataclass
class PartitionedBuild:
    """A finished Dask build: where it is, its bins, and the class columns for a summary."""

    path: Path
    bins: dict[str, TargetBins]
    frame: pd.DataFrame  # class and scout-class columns only (the CLI's summary table)
    info: dict[str, Any]
    source: str = "panda"


def _write(frame: pd.DataFrame, path: Path) -> None:
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)


def stage_rows(part: HistoryPart, stage: str, index: int, settings: Settings) -> StageRows:
    """Pass 1 on a worker: task rows of one partition to ``stage``; the slim columns back."""
    report = BadRowReport()
    rows = task_rows(part.history, report, settings)
    _write(rows, Path(stage) / f"rows-{index:05d}.parquet")
    if part.truth is not None and len(part.truth):
        part.truth.to_parquet(Path(stage) / f"truth-{index:05d}.parquet")
    slim = rows[SLIM_COLUMNS].copy()
    return StageRows(slim, report.rows, len(part.history.tasks), len(part.history.jobs))


def stage_finish(
    stage: str,
    folder: str,
    index: int,
    bins: dict[str, TargetBins],
    splits: pd.DataFrame,
    probabilities: Probabilities | None,
) -> tuple[pd.DataFrame, bytes]:
    """Pass 2 on a worker: classes and splits of one partition, written as its part file.

    Returns the class columns (for the summary) and the rows' hash bytes (fingerprint)."""
    rows = pq.read_table(Path(stage) / f"rows-{index:05d}.parquet").to_pandas()
    truth_path = Path(stage) / f"truth-{index:05d}.parquet"
    truth = None
    if probabilities is not None and truth_path.exists():
        truth = LatentTruth(pd.read_parquet(truth_path), probabilities)
    frame = label_rows(rows, bins, truth)
    for name in SPLIT_NAMES:
        frame[name] = frame["jeditaskid"].map(splits[name]).to_numpy(dtype=object)
    _write(frame, Path(folder) / f"part-{index:05d}.parquet")
    classes = [c for t in bins for c in (class_col(t), scout_class_col(t)) if c in frame]
    hashes = pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes()
    return frame[classes].astype(np.int8), hashes


def _gather(
    client: Client, futures: list, label: str, on_progress: ProgressCallback | None
) -> list:
    """Results in submission order, reporting progress as they complete; on a failure the
    pass's other partitions are cancelled before the error propagates."""
    from distributed import as_completed

    try:
        for done, _ in enumerate(as_completed(futures), start=1):
            if on_progress is not None:
                on_progress(label, done, len(futures))
        return client.gather(futures)
    except BaseException:
        client.cancel(futures)
        raise


def splits_and_bins(
    slim: pd.DataFrame,
    settings: Settings,
    bins_file: Path | None,
    bins: dict[str, TargetBins] | None,
) -> tuple[dict[str, TargetBins], pd.DataFrame]:
    """Splits and bins over all tasks at once, by the single path's own function."""
    splits, fitted = fit_splits_and_bins(slim, settings=settings, bins_file=bins_file, bins=bins)
    return fitted, pd.DataFrame(splits, index=slim["jeditaskid"].to_numpy())


def _run_stage_rows(
    client: Client, partitions: Partitions, stage: Path, settings: Settings,
    on_progress: ProgressCallback | None,
) -> list[StageRows]:  # fmt: skip
    from dask import delayed

    run = delayed(stage_rows, pure=False)
    futures = client.compute(
        [run(p, str(stage), i, settings) for i, p in enumerate(partitions.parts)]
    )
    return _gather(client, futures, "task rows", on_progress)


def _run_stage_finish(
    client: Client, stage: Path, folder: Path, results: list[StageRows],
    bins: dict[str, TargetBins], splits: pd.DataFrame, probabilities: Probabilities | None,
    on_progress: ProgressCallback | None,
) -> list[tuple[pd.DataFrame, bytes]]:  # fmt: skip
    bounds = np.cumsum([0, *(len(r.slim) for r in results)])
    futures = [
        client.submit(
            stage_finish,
            str(stage),
            str(folder),
            i,
            bins,
            splits.iloc[bounds[i] : bounds[i + 1]],
            probabilities,
            pure=False,
        )
        for i in range(len(results))
    ]
    return _gather(client, futures, "classes and splits", on_progress)


def build_partitioned_table(
    client: Client,
    partitions: Partitions,
    out: Path,
    *,
    settings: Settings,
    bins_file: Path | None = None,
    bins: dict[str, TargetBins] | None = None,
    strict: bool = False,
    on_progress: ProgressCallback | None = None,
) -> tuple[PartitionedBuild, BadRowReport]:
    """Build the table of ``partitions`` on ``client`` into the folder ``out`` (atomically).

    ``bins`` (a bundle's) takes precedence over ``bins_file``, as in the single path;
    ``on_progress(pass_name, partitions_done, partitions_total)`` reports progress."""
    import shutil

    with atomic_folder(out) as folder:
        stage = folder / "_stage"
        stage.mkdir()
        results = _run_stage_rows(client, partitions, stage, settings, on_progress)
        report = BadRowReport(rows=[row for r in results for row in r.bad_rows])
        if strict and len(report):
            raise BadRowsError(strict_message(report))
        slim = pd.concat([r.slim for r in results], ignore_index=True)
        if slim.empty:
            raise BadRowsError("no task has enough usable finished jobs for a target")
        fitted, splits = splits_and_bins(slim, settings, bins_file, bins)
        finished = _run_stage_finish(
            client, stage, folder, results, fitted, splits, partitions.probabilities, on_progress
        )
        shutil.rmtree(stage)
        digest = hashlib.sha256(b"".join(h for _, h in finished)).hexdigest()[:16]
        info = {
            "fingerprint": digest,
            "n_tasks_in_history": partitions.n_tasks,
            "n_jobs_in_history": sum(r.n_jobs for r in results),
            "bins_fitted_on": f"{SPLIT_COLUMNS[BINS_SPLIT]} train rows",
            "excluded": {f"{k[0]}: {k[1]}": v for k, v in report.counts().items()},
            "partitions": len(results),
        }
        write_common_metadata(folder, table_metadata(list(PANDA_FEATURES), fitted, "panda", info))
    classes = pd.concat([c for c, _ in finished], ignore_index=True)
    return PartitionedBuild(Path(out), fitted, classes, info), report
