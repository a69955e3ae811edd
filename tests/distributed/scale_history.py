"""A small generated history with a few bad rows, in SQLite and as a Parquet export, plus
the single-process table built from it: the reference every Dask build must equal."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from scoutless.cli.data import synthetic_truth
from scoutless.config import Settings
from scoutless.distributed.sources import Partitions, db_partitions, export_partitions
from scoutless.history.build import build_table_from_db
from scoutless.history.panda_db import create_schema, make_engine
from scoutless.history.table import TrainingTable
from scoutless.history.validation import BadRowReport

N_TASKS = 400
PER_PARTITION = 90  # 5 partitions: uneven last one, several per worker


@dataclass(frozen=True)
class GeneratedHistory:
    url: str
    export: Path
    reference: TrainingTable  # the single-process table, saved and loaded again
    report: BadRowReport


def _corrupt(frames) -> None:  # type: ignore[no-untyped-def]
    """A few rows the build must exclude and report, identically on both paths."""
    jobs = frames.jobs
    jobs.loc[jobs.index[::97], "maxpss"] = -5.0
    frames.taskparams.loc[frames.taskparams.index[7], "taskparams"] = "{not json"


@pytest.fixture(scope="session")
def generated_history(tmp_path_factory) -> GeneratedHistory:
    from scoutless.distributed.sources import write_export
    from scoutless.history.synthetic import generate_chunk
    from scoutless.history.synthetic import synthetic_truth as truth_table
    from scoutless.history.synthetic.writer import write_frames

    root = tmp_path_factory.mktemp("scale-history")
    frames = generate_chunk(N_TASKS, seed=7)
    _corrupt(frames)
    url = f"sqlite:///{root / 'history.sqlite'}"
    engine = make_engine(url)
    create_schema(engine)
    truth_table.create(engine, checkfirst=True)
    write_frames(engine, frames)
    # the export's files do not follow task boundaries: the build must shuffle by task
    rng = np.random.default_rng(0)
    jobs = frames.jobs.iloc[rng.permutation(len(frames.jobs))]
    for i, rows in enumerate(np.array_split(np.arange(len(jobs)), 3)):
        part = {"jobs": jobs.iloc[rows]}
        if i == 0:
            part.update(tasks=frames.tasks, taskparams=frames.taskparams)
        else:
            half = slice(None, None) if i == 1 else slice(0, 0)
            part.update(datasets=frames.datasets.iloc[half], truth=frames.truth.iloc[half])
        write_export(part, root / "export", i)
    table, report = build_table_from_db(
        engine, settings=Settings(), chunk_tasks=150, read_truth=synthetic_truth
    )
    reference = TrainingTable.load(table.save(root / "single.parquet"))
    return GeneratedHistory(url, root / "export", reference, report)


@dataclass(frozen=True)
class DaskBuild:
    """The Dask build of the generated history from its database, made once per session."""

    path: Path
    report: BadRowReport
    info: dict
    n_summary_rows: int
    progress: list[tuple[str, int, int]]


@pytest.fixture(scope="session")
def db_build(dask_client, generated_history, tmp_path_factory) -> DaskBuild:
    from scoutless.distributed.build import build_partitioned_table

    out = tmp_path_factory.mktemp("scale-db-build") / "table"
    seen: list[tuple[str, int, int]] = []
    build, report = build_partitioned_table(
        dask_client, db_parts(generated_history), out,
        settings=Settings(), on_progress=lambda *args: seen.append(args),
    )  # fmt: skip
    return DaskBuild(out, report, build.info, len(build.frame), seen)


def copy_of(build: DaskBuild, folder: Path) -> Path:
    """A previous table to be replaced (or, on failure, kept) by a new build."""
    import shutil

    return Path(shutil.copytree(build.path, folder / "table"))


def db_parts(history: GeneratedHistory) -> Partitions:
    """The database read by task-id ranges, with the synthetic truth (Bayes classes)."""
    return db_partitions(history.url, PER_PARTITION, read_truth=synthetic_truth)


def export_parts(history: GeneratedHistory) -> Partitions:
    """The Parquet export shuffled by task, with its exported truth."""
    from scoutless.history.synthetic import bayes_probabilities

    return export_partitions(history.export, PER_PARTITION, probabilities=bayes_probabilities)
