"""The ramCount a job's retry gets, and the task's ramCount when its posterior moves.

Units as JEDI keeps them: ``jedi_tasks.ramcount`` and ``jedi_dataset_contents.ramcount`` in
MB per core (``MBPerCore``), a job's ``minRamCount`` in MB for the job, compensated
(panda-server ``JobUtils.getJobMinRamCount`` → ``compensate_ram_count``: int(0.9 × (ramCount ×
cores + baseRamCount)), with the files' ramCount taking over where larger:
``InputChunk.getMaxRamCount``). ``replay/ladder.py`` codes JEDI's side.

**A retry** (``increaseRamLimitJobJEDI``, panda-server ``task_event_module.py``: ``UPDATE
JEDI_Dataset_Contents SET ramCount=:ramCount WHERE … AND ramCount<:ramCount`` for the job's
input files, read again when JEDI regenerates the job): the ramCount whose compensated
minRamCount holds the sizer's retry (the need conditional on exceeding what failed), capped
at the queue's ``maxrss`` (schedconfig: a job above it is brokered nowhere there) and the
task's ``RZ`` split rule (``increaseRamLimitJobJEDI_xtimes``: RZ ÷ cores), never below the
ladder's step JEDI itself writes (the larger wins; the caps never undercut JEDI).

**The task's ramCount** when the posterior moves (JEDI's re-tuning writes the same column):
never a ``…Fixed`` unit, never below the highest value seen in it that this follower did
not write itself (JEDI's raise, or the submission's, which the follower cannot tell apart;
kept as the task's floor), and only a move larger than ``min_change`` of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from scoutless.jedi.units import FIXED_UNITS, MEMORY_COMPENSATION
from scoutless.replay.ladder import RetryRam, increase_memory, job_min_ram_count


def ram_count_for(need_per_core: float, cores: float, base_mb: float) -> int:
    """The least ramCount (MB/core) whose job's compensated minRamCount is at least the
    need (MB per core above the base) × cores + base."""
    cores = max(cores, 1.0)
    target = need_per_core * cores + base_mb
    ram = max(math.ceil((target / MEMORY_COMPENSATION - base_mb) / cores), 1)
    while job_min_ram_count(ram, 0.0, cores, base_mb) < target:  # int() rounds down
        ram += 1
    return ram


def queue_cap(maxrss_mb: float | None, cores: float, base_mb: float) -> float:
    """The largest ramCount whose job's minRamCount stays within the queue's maxrss."""
    if not maxrss_mb or maxrss_mb <= 0:
        return math.inf
    return math.floor((maxrss_mb / MEMORY_COMPENSATION - base_mb) / max(cores, 1.0))


def rz_cap(split_rule: str | None, cores: float) -> float:
    """The task's RZ split rule as a ramCount cap (MB per job ÷ cores; none: no cap)."""
    rule = RetryRam.from_split_rule(split_rule)
    return rule.max_mb / max(cores, 1.0) if rule.max_mb else math.inf


def jedi_step(
    min_ram_count: float,
    cores: float,
    base_mb: float,
    task_ram: float,
    files: Mapping[float, int],
    fixed: bool,
) -> float:
    """What ``increaseRamLimitJobJEDI`` writes into the job's files (0: nothing — at the
    ladder's top, the task already above the step, or the task raised instead)."""
    raised = increase_memory(min_ram_count, cores, base_mb, task_ram, files, fixed=fixed)
    return raised.file_ram or 0.0


@dataclass(frozen=True)
class RetryRamCount:
    """A retry's ramCount and how it was reached (MB per core; ``written`` 0: none)."""

    sized: float  # the sizer's retry as a ramCount (0: the sizer had no answer)
    cap: float  # min(queue maxrss, RZ)
    jedi: float  # the ladder's step JEDI writes
    written: int


def retry_ram_count(
    need_per_core: float,
    cores: float,
    base_mb: float,
    *,
    maxrss_mb: float | None,
    split_rule: str | None,
    jedi: float,
) -> RetryRamCount:
    """The retry's ramCount: the sizer's, capped, at least JEDI's step."""
    sized = ram_count_for(need_per_core, cores, base_mb) if math.isfinite(need_per_core) else 0
    cap = min(queue_cap(maxrss_mb, cores, base_mb), rz_cap(split_rule, cores))
    written = max(min(float(sized), cap), jedi, 0.0)
    return RetryRamCount(float(sized), cap, jedi, math.ceil(written))


def task_floor(current: float | None, last_written: float | None, floor: float | None) -> float:
    """The least the task's ramCount may become: the highest value seen in it that this
    follower did not write (JEDI's raise, the submission's), kept across writes."""
    seen = current if current is not None and current != last_written else 0.0
    return max(seen, floor or 0.0)


def task_ram_update(
    posterior_ram: float,
    current: float | None,
    floor: float,
    ram_unit: str | None,
    min_change: float,
) -> int | None:
    """The task's new ramCount, or None to leave it (see the module's docstring); ``floor``
    from `task_floor`."""
    if ram_unit in FIXED_UNITS or not math.isfinite(posterior_ram) or posterior_ram <= 0:
        return None
    new = max(math.ceil(posterior_ram), math.ceil(floor))
    if current is not None and abs(new - current) <= min_change * current:
        return None
    return new
