"""The paths a computation takes by the size of its batch, owned in one place: up to which
size a request skips the machinery built for batches, and the chunk a large batch is cut
into.

A served request is usually one task, or a few. For those, the fixed cost of a batch
path (pandas' per-column work, a torch forward pass, a dozen numpy calls, a thread
hand-off, a wait for the next event-loop turn) outweighs the arithmetic itself, so each
stage has a path for a few rows: plain Python lists, the numpy forward pass of the trees
and the network, the event loop instead of a thread. The batch path is the definition;
each small path computes the same numbers (tests/allocation/test_fast_paths.py,
tests/service/test_fast_decisions.py, tests/features/test_encoders.py), so a threshold
changes only where time is spent, never an answer. ``benchmarks/fast_paths.py`` times each
small path against its definition (``results/fast_paths.json``).

The thresholds are read when a process is composed (the app factory, the command line's
settings) and held here for the process; library callers (training, the replay,
evaluation) get the defaults, which are the settings' defaults.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scoutless.config import Settings


@dataclass(frozen=True)
class FastPaths:
    """Up to how many rows or tasks each stage takes its small path; how many rows a large
    batch's network forward pass takes at a time."""

    #: rows encoded from plain lists (their times converted without pandas) and predicted
    #: by the numpy forward passes (trees, network), and the most tasks the event loop
    #: gathers into one group: per-call overhead dominates a few rows
    #: (``Settings.inference.small_batch``)
    rows: int = 64
    #: rows whose targets are predicted inline, not on the thread pool: the hand-off costs
    #: more than the targets' models on a few rows (``Settings.service.parallel_min_rows``)
    parallel_rows: int = 64
    #: tasks whose job context, value classes and domain checks are read in plain Python
    #: floats: a dozen numpy calls cost more than a few floats' arithmetic
    few_tasks: int = 16
    #: tasks of a request computed on the event loop, with the others of its turn: a thread
    #: hop costs more than a few tasks' whole computation
    inline_tasks: int = 4
    #: rows whose ordinal head (the DNN's cumulative link) runs on Python floats: a dozen
    #: numpy operations cost more than a few rows' arithmetic
    head_rows: int = 4
    #: values whose normal CDF and quantile are computed on Python floats (``math.erfc``,
    #: ``statistics.NormalDist``): a served task needs a handful, and importing
    #: ``scipy.special`` is a large share of a one-task command's start
    scalar_values: int = 64
    #: rows per torch forward pass of a large batch: bounds its peak memory
    #: (``Settings.inference.dnn_predict_batch``)
    dnn_chunk_rows: int = 65_536

    @classmethod
    def from_settings(cls, settings: Settings) -> FastPaths:
        """The thresholds a process's settings give (the rest are the code's)."""
        return cls(
            rows=settings.inference.small_batch,
            parallel_rows=settings.service.parallel_min_rows,
            dnn_chunk_rows=settings.inference.dnn_predict_batch,
        )


class _Current:
    """The process's thresholds: the defaults until a composition root configures them."""

    small = FastPaths()


def current() -> FastPaths:
    """The thresholds in force (read per call: a composition root may set them later)."""
    return _Current.small


def configure(small: FastPaths) -> None:
    """Set the process's thresholds (the app factory, the command line's settings)."""
    _Current.small = small


@contextmanager
def using(small: FastPaths) -> Iterator[FastPaths]:
    """The thresholds ``small`` inside the block, the previous ones after it (tests take
    one path or the other this way)."""
    before = _Current.small
    _Current.small = small
    try:
        yield small
    finally:
        _Current.small = before
