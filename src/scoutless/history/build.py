"""History → training table: validate, compute targets and scout estimates, classify, split.

Nothing is dropped silently: every excluded job or task is listed in a :class:`BadRowReport`
with its task id, job id and reason; ``strict=True`` raises instead of excluding (the
checks and the report are ``history/validation.py``'s).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from scoutless.config import HistorySettings, Settings
from scoutless.features.history import frame_history
from scoutless.features.spec import PANDA_FEATURES, FeatureSpec
from scoutless.history.panda_db import History, read_history, require_history, task_ids
from scoutless.history.splits import random_split, time_split
from scoutless.history.table import SPLIT_COLUMNS, TrainingTable, frame_fingerprint
from scoutless.history.validation import (
    BadRowReport,
    BadRowsError,
    strict_message,
    validate_history,
)
from scoutless.targets.bins import TargetBins, fit_bins, load_bins
from scoutless.targets.estimators import compute_task_targets, scout_jobs
from scoutless.targets.spec import (
    TARGET_NAMES,
    TRUTH_PARTS,
    bayes_class_col,
    bayes_confidence_col,
    class_col,
    scout_class_col,
    scout_value_col,
    truth_col,
    value_col,
)

BINS_SPLIT = "random"  # a PanDA table's default split: its train rows fit the bins


# --------------------------------------------------------------------------- table parts


def scout_wait_hours(jobs: pd.DataFrame, tasks: pd.DataFrame, n_scouts: int) -> pd.Series:
    """Hours from task creation until half of its scouts finished (JEDI's first trigger)."""
    scouts = scout_jobs(jobs[jobs["jobstatus"].eq("finished")], n_scouts)
    ends = pd.to_datetime(scouts["endtime"]).groupby(scouts["jeditaskid"])
    half = ends.quantile(0.5, interpolation="higher")
    created = pd.to_datetime(tasks.set_index("jeditaskid")["creationdate"])
    return ((half - created.reindex(half.index)).dt.total_seconds() / 3600.0).rename(
        "scout_wait_hours"
    )


def split_columns(
    frame: pd.DataFrame, *, seed: int, test_fraction: float, strata: np.ndarray | None
) -> dict[str, np.ndarray]:
    """``split_random``: stratified on ``strata``; ``split_time``: the latest rows are test."""
    return {
        "split_random": random_split(
            len(frame), seed=seed, test_fraction=test_fraction, strata=strata
        ),
        "split_time": time_split(frame["creationdate"].to_numpy(), test_fraction),
    }


def add_classes(frame: pd.DataFrame, bins: dict[str, TargetBins]) -> pd.DataFrame:
    out = frame.copy()
    for target, b in bins.items():
        out[class_col(target)] = b.classify(out[value_col(target)].to_numpy())
        if scout_value_col(target) in out.columns:
            out[scout_class_col(target)] = b.classify(out[scout_value_col(target)].to_numpy())
    return out


@dataclass(frozen=True)
class LatentTruth:
    """A synthetic history's latent truth (rows indexed by jeditaskid) and the function that
    turns it into class probabilities per target, rows following ``frame.index``.

    The build knows no generator: whoever knows the history is synthetic hands this in
    (the CLI reads it with :func:`scoutless.cli.data.synthetic_truth`).
    """

    frame: pd.DataFrame
    probabilities: Callable[[pd.DataFrame, dict[str, TargetBins]], dict[str, np.ndarray]]


#: reads the latent truth of some task ids, or None when the database has none
TruthReader = Callable[[Engine, list[int]], LatentTruth | None]


def add_bayes(frame: pd.DataFrame, truth: LatentTruth, bins: dict[str, TargetBins]) -> pd.DataFrame:
    """Bayes-optimal class and its probability, and each task's true value distribution,
    from the generator's latent truth."""
    out = frame.copy()
    index = truth.frame.index
    for target, proba in truth.probabilities(truth.frame, bins).items():
        best = pd.Series(proba.argmax(axis=1), index=index)
        conf = pd.Series(proba.max(axis=1), index=index)
        out[bayes_class_col(target)] = out["jeditaskid"].map(best).fillna(-1).astype(int)
        out[bayes_confidence_col(target)] = out["jeditaskid"].map(conf)
        for part in TRUTH_PARTS:  # the Bayes-optimal value quantiles of evaluation
            if f"{target}_{part}" in truth.frame.columns:
                column = truth.frame[f"{target}_{part}"]
                out[truth_col(target, part)] = out["jeditaskid"].map(column)
    return out


# --------------------------------------------------------------------------- build


def task_rows(history: History, report: BadRowReport, settings: Settings) -> pd.DataFrame:
    """Validated tasks with features, target values and scout estimates (no classes yet)."""
    clean = validate_history(history, report)
    targets = compute_task_targets(clean.jobs, clean.tasks, settings=settings)
    scouts = compute_task_targets(clean.jobs, clean.tasks, settings=settings, scouts_only=True)
    targets = targets.dropna(how="all", subset=list(TARGET_NAMES))
    no_target = clean.tasks[~clean.tasks["jeditaskid"].isin(targets.index)]
    if len(no_target):
        report.add(
            no_target,
            "jedi_tasks",
            f"fewer than {settings.targets.min_jobs_per_task} usable finished jobs",
        )
    frame = clean.features().join(targets[list(TARGET_NAMES)].add_suffix("_value"), how="inner")
    frame = frame.join(scouts[list(TARGET_NAMES)].add_suffix("_scout_value"))
    frame = frame.join(scout_wait_hours(clean.jobs, clean.tasks, settings.targets.n_scouts))
    frame = frame.join(targets["n_jobs"])
    created = pd.to_datetime(clean.tasks.set_index("jeditaskid")["creationdate"])
    frame.insert(0, "creationdate", created.reindex(frame.index))
    frame["finished_at"] = task_end_times(clean.jobs).reindex(frame.index)
    return frame.reset_index()


def task_end_times(jobs: pd.DataFrame) -> pd.Series:
    """When each task's last job ended: from then on its values are history for later tasks."""
    return pd.to_datetime(jobs.groupby("jeditaskid")["endtime"].max())


def task_history_frame(
    tasks: pd.DataFrame, jobs: pd.DataFrame, values: pd.DataFrame
) -> pd.DataFrame:
    """Finished tasks as history-store input: keys, creation and end time, ``{t}_value``."""
    frame = tasks.set_index("jeditaskid")
    frame = frame.join(values[[t for t in TARGET_NAMES if t in values]].add_suffix("_value"))
    frame["finished_at"] = task_end_times(jobs).reindex(frame.index)
    return frame.reset_index()


def add_task_history(
    frame: pd.DataFrame, cfg: HistorySettings
) -> tuple[pd.DataFrame, list[FeatureSpec]]:
    """Per user / transformation / campaign: the history features of earlier finished tasks
    (:mod:`scoutless.features.history`, the same component traces and the service use)."""
    history, specs = frame_history(frame, list(TARGET_NAMES), cfg=cfg)
    return pd.concat([frame, history], axis=1), specs


def _fit_table_bins(
    frame: pd.DataFrame,
    split: np.ndarray,
    bins_file: Path | None,
    given: dict[str, TargetBins] | None,
) -> dict[str, TargetBins]:
    """Bins fitted on the rows the default (random) split trains on: quantile edges and
    recommended values never see a test row (``given`` bins keep their edges)."""
    targets = list(given) if given is not None else list(TARGET_NAMES)
    train = split == "train"
    values = {t: frame[value_col(t)].to_numpy(dtype=float)[train] for t in targets}
    return fit_bins(values, path=bins_file, given=given)


def _split_strata(
    frame: pd.DataFrame, bins_file: Path | None, given: dict[str, TargetBins] | None
) -> np.ndarray | None:
    """Memory class of every row, to stratify the random split on. Binned over all rows —
    the split may look at labels (every stratified split does); no model or bin edge does."""
    if given is None:
        values = {"memory": frame[value_col("memory")].to_numpy(dtype=float)}
        given = load_bins(bins_file, values=values, targets=["memory"])
    if "memory" not in given:
        return None
    return given["memory"].classify(frame[value_col("memory")].to_numpy(dtype=float))


def fit_splits_and_bins(
    frame: pd.DataFrame,
    *,
    settings: Settings,
    bins_file: Path | None = None,
    bins: dict[str, TargetBins] | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, TargetBins]]:
    """Split columns, then bins fitted on the training rows (given, from a file, or
    quantiles). Needs only ``creationdate`` and the target values of every task, so the
    Dask build runs it on the client over those columns alone."""
    strata = _split_strata(frame, bins_file, bins)
    splits = split_columns(
        frame, seed=settings.seed, test_fraction=settings.splits.test_fraction, strata=strata
    )
    return splits, _fit_table_bins(frame, splits[SPLIT_COLUMNS[BINS_SPLIT]], bins_file, bins)


def label_rows(
    frame: pd.DataFrame, bins: dict[str, TargetBins], truth: LatentTruth | None
) -> pd.DataFrame:
    """Classes of the target values and scout estimates, and the Bayes classes if ``truth``."""
    frame = add_classes(frame, bins)
    if truth is not None and len(truth.frame):
        frame = add_bayes(frame, truth, bins)
    return frame


def finish_table(
    frame: pd.DataFrame,
    report: BadRowReport,
    *,
    settings: Settings,
    bins_file: Path | None = None,
    bins: dict[str, TargetBins] | None = None,
    truth: LatentTruth | None = None,
    info: dict[str, object] | None = None,
    with_history: bool = False,
) -> TrainingTable:
    """Splits, then bins fitted on the training rows, classes and Bayes classes;
    ``with_history`` adds the per-user/transformation/campaign task-history features."""
    features = list(PANDA_FEATURES)
    if with_history:
        frame, specs = add_task_history(frame, settings.history)
        features += specs
    splits, bins = fit_splits_and_bins(frame, settings=settings, bins_file=bins_file, bins=bins)
    frame = label_rows(frame, bins, truth).assign(**splits)
    return TrainingTable(
        frame=frame,
        features=features,
        bins=bins,
        source="panda",
        info={
            "fingerprint": frame_fingerprint(frame)[:16],
            **(info or {}),
            "bins_fitted_on": f"{SPLIT_COLUMNS[BINS_SPLIT]} train rows",
            "excluded": {f"{k[0]}: {k[1]}": v for k, v in report.counts().items()},
        },
    )


def build_training_table(
    history: History,
    *,
    bins_file: Path | None = None,
    strict: bool = False,
    settings: Settings,
    truth: LatentTruth | None = None,
    bins: dict[str, TargetBins] | None = None,
    with_history: bool = False,
) -> tuple[TrainingTable, BadRowReport]:
    """One row per usable task: features, target values and classes, scout estimates, splits.

    ``bins`` (e.g. a serving bundle's) takes precedence over ``bins_file``; ``truth`` (from
    the synthetic generator) adds the Bayes-optimal classes.
    """
    report = BadRowReport()
    frame = task_rows(history, report, settings)
    if strict and len(report):
        raise BadRowsError(strict_message(report))
    info = {"n_tasks_in_history": len(history.tasks), "n_jobs_in_history": len(history.jobs)}
    table = finish_table(
        frame, report, settings=settings, bins_file=bins_file, bins=bins, truth=truth, info=info,
        with_history=with_history,
    )  # fmt: skip
    return table, report


def build_table_from_db(
    engine: Engine,
    bins_file: Path | None = None,
    strict: bool = False,
    since: datetime | None = None,
    *,
    settings: Settings,
    bins: dict[str, TargetBins] | None = None,
    chunk_tasks: int = 100_000,
    on_chunk: Callable[[int, int], None] | None = None,
    with_history: bool = False,
    read_truth: TruthReader | None = None,
) -> tuple[TrainingTable, BadRowReport]:
    """Read the history chunk by chunk of tasks (bounded memory), then split and bin once.

    ``read_truth`` adds the Bayes-optimal classes of a synthetic history (its latent truth,
    chunk by chunk). ``on_chunk(tasks_done, tasks_total)`` reports progress.
    """
    require_history(engine)  # names what a missing or older history lacks, before reading
    ids = task_ids(engine, since=since)
    if not ids:
        raise BadRowsError(f"no tasks in jedi_tasks{f' created since {since}' if since else ''}")
    report = BadRowReport()
    frames: list[pd.DataFrame] = []
    truths: list[LatentTruth] = []
    n_jobs = 0
    for start in range(0, len(ids), chunk_tasks):
        chunk = ids[start : start + chunk_tasks]
        history = read_history(engine, chunk)
        n_jobs += len(history.jobs)
        frames.append(task_rows(history, report, settings))
        if strict and len(report):
            raise BadRowsError(strict_message(report))
        truth = read_truth(engine, chunk) if read_truth is not None and chunk else None
        if truth is not None:
            truths.append(truth)
        if on_chunk is not None:
            on_chunk(min(start + chunk_tasks, len(ids)), len(ids))
    frame = pd.concat(frames, ignore_index=True)
    truth = (
        LatentTruth(pd.concat([t.frame for t in truths]), truths[0].probabilities)
        if truths
        else None
    )
    info = {"n_tasks_in_history": len(ids), "n_jobs_in_history": n_jobs}
    table = finish_table(
        frame, report, settings=settings, bins_file=bins_file, bins=bins, truth=truth, info=info,
        with_history=with_history,
    )  # fmt: skip
    return table, report
