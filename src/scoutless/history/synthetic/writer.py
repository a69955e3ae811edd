"""Generate a whole history chunk by chunk and write it to a PanDA-compatible database."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from sqlalchemy import Engine

from scoutless.config import WithinTaskSettings, get_settings
from scoutless.history.panda_db import bulk_insert, create_schema
from scoutless.history.synthetic.block import BLOCK_TASKS, BlockSpec, Frames, build_block
from scoutless.history.synthetic.latent import World
from scoutless.history.synthetic.truth import synthetic_truth
from scoutless.history.synthetic.vocabulary import load_vocabulary

SCENARIOS = (None, "release_drift")
DEFAULT_START = datetime(2024, 1, 1)


@dataclass(frozen=True)
class GenerationStats:
    n_tasks: int
    n_jobs: int
    seconds: float

    @property
    def rows_per_s(self) -> float:
        """Job rows written per second."""
        return self.n_jobs / self.seconds if self.seconds > 0 else float("inf")


def _spec(n_tasks, seed, start, days, first_task_id, scenario, drift_start, within) -> BlockSpec:  # type: ignore[no-untyped-def]
    if n_tasks < 1:
        raise ValueError(f"{n_tasks=} must be positive")
    if days <= 0:
        raise ValueError(f"{days=} must be positive")
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario={scenario!r}; expected one of {SCENARIOS}")
    if scenario == "release_drift" and drift_start is None:
        drift_start = start + timedelta(days=days * 2 / 3)
    return BlockSpec(
        seed=seed, n_tasks=n_tasks, first_task_id=first_task_id, start=start, days=days,
        drift_start=drift_start if scenario == "release_drift" else None,
        within=within or get_settings().within_task,
    )  # fmt: skip


def iter_chunks(
    n_tasks: int,
    *,
    seed: int = 42,
    start: datetime = DEFAULT_START,
    days: float = 365,
    chunk_tasks: int = 20_000,
    first_task_id: int = 1,
    scenario: str | None = None,
    drift_start: datetime | None = None,
    within: WithinTaskSettings | None = None,
) -> Iterator[Frames]:
    """Frames for consecutive chunks; chunks are whole 1000-task blocks, so the rows do not
    depend on ``chunk_tasks`` (only the seed and the run's parameters). ``within``: the
    within-task mechanisms (default: ``Settings().within_task``)."""
    spec = _spec(n_tasks, seed, start, days, first_task_id, scenario, drift_start, within)
    vocab = load_vocabulary()
    world = World.build(vocab, seed, spec.within.site_speed_sigma)
    n_blocks = -(-n_tasks // BLOCK_TASKS)
    per_chunk = max(1, -(-chunk_tasks // BLOCK_TASKS))
    for lo in range(0, n_blocks, per_chunk):
        blocks = range(lo, min(lo + per_chunk, n_blocks))
        yield Frames.concat([build_block(spec, b, vocab, world) for b in blocks])


def generate_chunk(n_tasks: int, **kwargs) -> Frames:  # type: ignore[no-untyped-def]
    """All tables of a small history in memory (tests, benchmarks, notebooks)."""
    return Frames.concat(list(iter_chunks(n_tasks, chunk_tasks=n_tasks, **kwargs)))


def write_frames(engine: Engine, frames: Frames) -> None:
    bulk_insert(engine, "jedi_tasks", frames.tasks)
    bulk_insert(engine, "jedi_taskparams", frames.taskparams)
    bulk_insert(engine, "jedi_datasets", frames.datasets)
    bulk_insert(engine, "jobsarchived4", frames.jobs)
    bulk_insert(engine, synthetic_truth.name, frames.truth)


def generate_history(
    engine: Engine,
    n_tasks: int,
    *,
    seed: int = 42,
    start: datetime = DEFAULT_START,
    days: float = 365,
    chunk_tasks: int = 20_000,
    first_task_id: int = 1,
    scenario: str | None = None,
    drift_start: datetime | None = None,
    within: WithinTaskSettings | None = None,
    progress: bool = True,
) -> GenerationStats:
    """Write ``n_tasks`` synthetic tasks (+ jobs, datasets, parameters, truth) to ``engine``.

    Streams chunk by chunk so memory stays bounded; ``release_drift`` makes tasks created
    after ``drift_start`` (default: two thirds into the period) use a new release for
    simul/pile/reco/deriv that needs ~1.75x the memory and 1.5x the CPU.
    """
    began = time.perf_counter()
    create_schema(engine)
    synthetic_truth.create(engine, checkfirst=True)
    n_jobs = 0
    columns = [
        TextColumn("[bold]generating"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,} tasks"),
        TextColumn("{task.fields[jobs]:,} jobs"), TimeElapsedColumn(), TimeRemainingColumn(),
    ]  # fmt: skip
    with Progress(*columns, disable=not progress, transient=False) as bar:
        job = bar.add_task("generate", total=n_tasks, jobs=0)
        for frames in iter_chunks(
            n_tasks, seed=seed, start=start, days=days, chunk_tasks=chunk_tasks,
            first_task_id=first_task_id, scenario=scenario, drift_start=drift_start,
            within=within,
        ):  # fmt: skip
            write_frames(engine, frames)
            n_jobs += len(frames.jobs)
            bar.update(job, advance=len(frames.tasks), jobs=n_jobs)
    return GenerationStats(n_tasks=n_tasks, n_jobs=n_jobs, seconds=time.perf_counter() - began)
