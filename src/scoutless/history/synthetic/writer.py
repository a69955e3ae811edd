"""Generate a whole history chunk by chunk and write it to a PanDA-compatible database."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path

import pandas as pd
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from sqlalchemy import Engine

from scoutless.config import WithinTaskSettings
from scoutless.history.db_write import bulk_insert
from scoutless.history.panda_db import create_schema
from scoutless.history.staging import load_staged, stage_frames
from scoutless.history.synthetic.block import BLOCK_TASKS, BlockSpec, Frames, build_block
from scoutless.history.synthetic.builders import build_in_processes
from scoutless.history.synthetic.calibration import World
from scoutless.history.synthetic.truth import synthetic_truth
from scoutless.history.synthetic.vocabulary import load_vocabulary
from scoutless.history.upgrade import describe, upgrade_history

SCENARIOS = (None, "release_drift")
PIPELINE_CHUNK_TASKS = 2_000  # pipelined chunks: small, so the first write starts early
DEFAULT_START = datetime(2024, 1, 1)


@dataclass(frozen=True)
class GenerationStats:
    n_tasks: int
    n_jobs: int
    seconds: float
    #: columns added to an older history before writing (``describe``), "" when current
    upgraded: str = ""

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
        within=within or WithinTaskSettings(),
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
    workers: int = 0,
) -> Iterator[Frames]:
    """Frames for consecutive chunks; chunks are whole 1000-task blocks, so the rows do not
    depend on ``chunk_tasks`` (only the seed and the run's parameters). ``within``: the
    within-task mechanisms (default: the code's, ``WithinTaskSettings()``; the command
    line passes the configured ones). ``workers`` > 0 builds
    chunks in that many processes ahead of the consumer (same rows, same order), so
    writing one chunk overlaps building the next."""
    spec = _spec(n_tasks, seed, start, days, first_task_id, scenario, drift_start, within)
    return _frames(spec, _chunks(n_tasks, chunk_tasks), workers)


def _frames(spec: BlockSpec, chunks: list[range], workers: int) -> Iterator[Frames]:
    if workers <= 0 or len(chunks) < 2:
        return (_build_chunk(spec, blocks) for blocks in chunks)
    return build_in_processes(chunks, workers, _build_chunk, spec)


def _chunks(n_tasks: int, chunk_tasks: int) -> list[range]:
    n_blocks = -(-n_tasks // BLOCK_TASKS)
    per_chunk = max(1, -(-chunk_tasks // BLOCK_TASKS))
    return [range(lo, min(lo + per_chunk, n_blocks)) for lo in range(0, n_blocks, per_chunk)]


@lru_cache(maxsize=4)
def _world(seed: int, site_speed_sigma: float) -> World:
    return World.build(load_vocabulary(), seed, site_speed_sigma)


def _build_chunk(spec: BlockSpec, blocks: range) -> Frames:
    """One chunk's frames (module level: worker processes unpickle and call it)."""
    vocab = load_vocabulary()
    world = _world(spec.seed, spec.within.site_speed_sigma)
    return Frames.concat([build_block(spec, b, vocab, world) for b in blocks])


@dataclass(frozen=True)
class _Staged:
    path: Path
    n_tasks: int
    n_jobs: int


def _build_staged(stage_dir: Path, spec: BlockSpec, blocks: range) -> _Staged:
    """Builder side of a SQLite target: the chunk converted and written to a staging file."""
    frames = _build_chunk(spec, blocks)
    path = stage_dir / f"blocks-{blocks.start}.sqlite"
    stage_frames(path, _tables(frames))
    return _Staged(path, len(frames.tasks), len(frames.jobs))


def _tables(frames: Frames) -> dict[str, pd.DataFrame]:
    return {
        "jedi_tasks": frames.tasks, "jedi_taskparams": frames.taskparams,
        "jedi_datasets": frames.datasets, "jobsarchived4": frames.jobs,
        synthetic_truth.name: frames.truth,
    }  # fmt: skip


def default_workers(n_tasks: int, chunk_tasks: int) -> int:
    """Builder processes for :func:`generate_history`: none for a history of one or two
    chunks (starting a process costs more than it saves), else one per core, at most four:
    the builders do most of the work (on SQLite also the conversion and binding), the
    writer's share is small."""
    if n_tasks <= 2 * chunk_tasks:
        return 0
    return max(1, min(4, os.cpu_count() or 1))


def generate_chunk(n_tasks: int, **kwargs) -> Frames:  # type: ignore[no-untyped-def]
    """All tables of a small history in memory (tests, benchmarks, notebooks)."""
    return Frames.concat(list(iter_chunks(n_tasks, chunk_tasks=n_tasks, **kwargs)))


def write_frames(engine: Engine, frames: Frames) -> None:
    for table, frame in _tables(frames).items():
        bulk_insert(engine, table, frame)


def _write_chunks(
    engine: Engine, spec: BlockSpec, chunk_tasks: int, workers: int
) -> Iterator[tuple[int, int]]:
    """Write chunk after chunk; yields (tasks, jobs) written. A SQLite target with workers
    gets staging files (the builders convert and bind, this process copies in C); any other
    gets frames from the builders, or built here when there are none."""
    chunks = _chunks(spec.n_tasks, chunk_tasks)
    if workers > 0 and len(chunks) > 1 and engine.dialect.name == "sqlite":
        with tempfile.TemporaryDirectory(prefix="scoutless-stage-") as stage_dir:
            for staged in build_in_processes(chunks, workers, _build_staged, Path(stage_dir), spec):
                load_staged(engine, staged.path)
                staged.path.unlink()
                yield staged.n_tasks, staged.n_jobs
        return
    for frames in _frames(spec, chunks, workers):
        write_frames(engine, frames)
        yield len(frames.tasks), len(frames.jobs)


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
    workers: int | None = None,
) -> GenerationStats:
    """Write ``n_tasks`` synthetic tasks (+ jobs, datasets, parameters, truth) to ``engine``.

    Streams chunk by chunk so memory stays bounded; ``release_drift`` makes tasks created
    after ``drift_start`` (default: two thirds into the period) use a new release for
    simul/pile/reco/deriv that needs ~1.75x the memory and 1.5x the CPU. ``workers``:
    processes that build chunks while this one writes (default :func:`default_workers`);
    with workers, chunks are at most ``PIPELINE_CHUNK_TASKS`` so writing starts early.
    """
    began = time.perf_counter()
    if workers is None:
        workers = default_workers(n_tasks, min(chunk_tasks, PIPELINE_CHUNK_TASKS))
    if workers > 0:
        chunk_tasks = min(chunk_tasks, PIPELINE_CHUNK_TASKS)
    create_schema(engine)
    upgraded = describe(upgrade_history(engine))  # appending to an older history
    synthetic_truth.create(engine, checkfirst=True)
    n_jobs = 0
    columns = [
        TextColumn("[bold]generating"), BarColumn(), TextColumn("{task.completed:,}/{task.total:,} tasks"),
        TextColumn("{task.fields[jobs]:,} jobs"), TimeElapsedColumn(), TimeRemainingColumn(),
    ]  # fmt: skip
    with Progress(*columns, disable=not progress, transient=False) as bar:
        job = bar.add_task("generate", total=n_tasks, jobs=0)
        spec = _spec(n_tasks, seed, start, days, first_task_id, scenario, drift_start, within)
        for tasks_done, jobs_done in _write_chunks(engine, spec, chunk_tasks, workers):
            n_jobs += jobs_done
            bar.update(job, advance=tasks_done, jobs=n_jobs)
    return GenerationStats(
        n_tasks=n_tasks, n_jobs=n_jobs, seconds=time.perf_counter() - began, upgraded=upgraded
    )
