"""What a scheduler knows of an instance when it releases it, defined once for every caller
of the sizer (the peers' protocol, the trace replay's online strategy, the benchmarks).

An instance is sized from its task type (a `TypeKey`, kept beside its features: the
sizer's state is per type) and its `Release`. Nothing measured while the instance runs
belongs here: the peers' ``rchar`` (bytes read, counted during the run) enters only as
the input size of the protocol's named option ``peers-rchar`` (`sizing/instances.py`)."""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass

#: a task type's key: whatever its instances share (a Nextflow process name, a PanDA
#: task's type tuple, a trace's executable and user)
TypeKey = Hashable


@dataclass(frozen=True)
class Release:
    """An instance's features at release: its input files' total size (bytes) and count,
    its cores, the user's request (in the sized resource's unit) and its events (PanDA);
    NaN where unknown. ``retry_at``: where a failed attempt is retried by someone else, in
    the sized unit (PanDA: JEDI retries a job killed at its walltime at the queue's
    maxtime), so a failure is priced with that retry (`resources.Resource.failure_price`);
    NaN: the sizer's own retries."""

    input_size: float = math.nan
    input_files: float = math.nan
    cores: float = 1.0
    request: float = math.nan
    events: float = math.nan
    retry_at: float = math.nan

    def log_input(self) -> float:
        """log(1 + input size): the scale the sizer's location models regress on (NaN when
        the size is unknown)."""
        x = self.input_size
        return math.log1p(x) if math.isfinite(x) and x >= 0 else math.nan

    def log_cores(self) -> float:
        """log(cores): the scale the `models.Cores` location regresses on (NaN unknown)."""
        c = self.cores
        return math.log(c) if math.isfinite(c) and c > 0 else math.nan
