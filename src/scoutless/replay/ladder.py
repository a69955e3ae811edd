"""JEDI's memory retry of a job killed for memory, as panda-server codes it.

Read at panda-server commit 9cc36033555c17031bbc6815d0af209b833139fc:

* ``retryModule.apply_retrial_rules``: the error code's retrial rule picks the action,
  ``increase_memory`` (``DBProxy.increaseRamLimitJobJEDI``) or ``increase_memory_xtimes``
  (``DBProxy.increaseRamLimitJobJEDI_xtimes``, with the task's ``RX``/``RY``/``RZ`` split
  rules); both live in ``db_proxy_mods/task_event_module.py``.
* Both count the task's master *input files* (``JEDI_Dataset_Contents.ramCount`` grouped by
  value; an unraised file has ramCount 0): once more than 30 % of them hold a ramCount above
  the task's, the task's ramCount is raised (``increaseRamLimitJEDI``) *instead of* the
  job's files. The share is read before this job's own files are raised.
* ``increase_memory`` raises the job's files to the ladder's next step above the job's own
  ramCount (1000/2000/3000/4000/6000/8000 MB per core); at the top nothing changes; a task
  already above that step is left alone.
* The job's ramCount is what ``JobUtils.getJobMinRamCount`` gave it: max(task ramCount, its
  files' ramCount) (``InputChunk.getMaxRamCount``) × cores + baseRamCount, compensated
  (``JobUtils.compensate_ram_count``: int(× 0.9)); the retry module undoes the compensation
  (``decompensate_ram_count``: int(÷ 0.9)) and normalises per core.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scoutless.jedi.units import MEMORY_COMPENSATION, split_rule_value

#: ``increaseRamLimitJobJEDI``'s limit_list, MB per core
LADDER_MB_PER_CORE: tuple[float, ...] = (1000.0, 2000.0, 3000.0, 4000.0, 6000.0, 8000.0)
#: the share of a task's input files raised above its ramCount past which the task is raised
TASK_RAISE_SHARE = 0.3
INCREASE_MEMORY = "increase_memory"
INCREASE_MEMORY_XTIMES = "increase_memory_xtimes"


@dataclass(frozen=True)
class RetryRam:
    """A task's ``RX``/``RY``/``RZ`` split rules as ``increaseRamLimitJobJEDI_xtimes`` reads
    them: ``RX`` is parsed but its formula no longer uses it; ``RY`` (default 1.0) scales the
    job's ramCount by RY ÷ the task's ramCount; ``RZ`` caps the result (MB per job, ÷ cores)."""

    offset: int = 0
    step: float = 1.0
    max_mb: float | None = None

    @classmethod
    def from_split_rule(cls, split_rule: str | None) -> RetryRam:
        rx, ry, rz = (split_rule_value(split_rule, tag) for tag in ("RX", "RY", "RZ"))
        return cls(
            offset=int(rx) if rx else 0,
            step=float(ry) if ry else 1.0,
            max_mb=float(rz) if rz else None,
        )


@dataclass(frozen=True)
class RamRaise:
    """What a retry changed: the task's ramCount or the job's input files' ramCount (MB per
    core; None: unchanged). JEDI changes one of them, never both."""

    task_ram: float | None = None
    file_ram: float | None = None


def compensate(ram_count: float) -> int:
    """``JobUtils.compensate_ram_count``."""
    return int(ram_count * MEMORY_COMPENSATION)


def decompensate(ram_count: float) -> int:
    """``JobUtils.decompensate_ram_count``."""
    return int(ram_count / MEMORY_COMPENSATION)


def job_min_ram_count(task_ram: float, file_ram: float, cores: float, base_mb: float) -> int:
    """A job's ``minRamCount`` (MB, compensated): ``JobUtils.getJobMinRamCount`` of the task's
    ramCount and its files' (``InputChunk.getMaxRamCount``: the larger)."""
    return compensate(max(task_ram, file_ram) * max(cores, 1.0) + base_mb)


def per_core(min_ram_count: float, cores: float, base_mb: float) -> float:
    """``increaseRamLimitJobJEDI``'s normalised job ramCount: decompensated, less the base,
    per core (``xtimes`` passes ``base_mb`` 0: it does not subtract the base)."""
    return (decompensate(min_ram_count) - base_mb) / max(cores, 1.0)


def raised_share(files: Mapping[float, int], task_ram: float) -> float:
    """The share of the task's input files whose ramCount is above the task's."""
    total = sum(files.values())
    above = sum(n for ram, n in files.items() if ram > task_ram)
    return above / total if total else 0.0


def raise_task(
    task_ram: float, job_ram: float, ladder: Sequence[float], no_limits: bool = False
) -> float | None:
    """``increaseRamLimitJEDI``: the task's next ladder step above max(its ramCount, the
    job's); None (no change) when the task is already above the job or at the top. With
    ``no_limits`` (the xtimes path) a value past the top is kept as it is."""
    if task_ram > job_ram or (task_ram >= ladder[-1] and not no_limits):
        return None
    limit = max(task_ram, job_ram)
    nxt = next((step for step in ladder if limit < step), ladder[-1])
    if limit > nxt and no_limits:
        nxt = limit
    return float(nxt)


def increase_memory(
    min_ram_count: float,
    cores: float,
    base_mb: float,
    task_ram: float,
    files: Mapping[float, int],
    ladder: Sequence[float] = LADDER_MB_PER_CORE,
    share: float = TASK_RAISE_SHARE,
    fixed: bool = False,
) -> RamRaise:
    """``increaseRamLimitJobJEDI`` for a job whose ``minRamCount`` was ``min_ram_count``;
    ``files``: the task's input files, ramCount → count, before this job's are raised;
    ``fixed``: the task's ramUnit is ``MBPerCoreFixed`` (never raised as a whole)."""
    job_ram = per_core(min_ram_count, cores, base_mb)
    if not fixed and raised_share(files, task_ram) > share:
        minimum = job_ram if job_ram > 0 else 0.0
        top_file = max(files, default=0.0)
        if top_file > minimum:
            minimum = top_file - 1  # otherwise it goes over that file's step
        if minimum:
            return RamRaise(task_ram=raise_task(task_ram, minimum, ladder))
    if job_ram >= ladder[-1]:
        return RamRaise()
    nxt = next(step for step in ladder if job_ram < step)
    if task_ram > nxt:
        return RamRaise()
    return RamRaise(file_ram=float(nxt))


def increase_memory_xtimes(
    min_ram_count: float,
    cores: float,
    task_ram: float,
    files: Mapping[float, int],
    rule: RetryRam,
    ladder: Sequence[float] = LADDER_MB_PER_CORE,
    share: float = TASK_RAISE_SHARE,
    fixed: bool = False,
) -> RamRaise:
    """``increaseRamLimitJobJEDI_xtimes``: the job's ramCount (decompensated, per core, the
    base not subtracted) × RY ÷ the task's ramCount, at most RZ ÷ cores; the task raised
    instead past the 30 % share (``increaseRamLimitJEDI`` without the ladder's top)."""
    job_ram = per_core(min_ram_count, cores, 0.0)
    minimum = job_ram * rule.step / task_ram if task_ram > 0 else 0.0
    if rule.max_mb:
        minimum = min(minimum, rule.max_mb / max(cores, 1.0))
    if not fixed and raised_share(files, task_ram) > share and minimum and minimum > task_ram:
        return RamRaise(task_ram=raise_task(task_ram, minimum, ladder, no_limits=True))
    if task_ram > minimum or job_ram >= minimum:
        return RamRaise()
    return RamRaise(file_ram=float(minimum))


class FileLedger:
    """The input files' ramCounts of every task (``JEDI_Dataset_Contents.ramcount``, grouped
    by value per task as the retry module reads them): a unit's files share one ramCount,
    0 until a retry raises them."""

    def __init__(self, unit_task: Sequence[int], unit_files: Sequence[int], n_tasks: int):
        self.unit_ram = [0.0] * len(unit_task)
        self.unit_files = [max(int(n), 1) for n in unit_files]
        self.files: list[dict[float, int]] = [{} for _ in range(n_tasks)]
        for t, n in zip(unit_task, self.unit_files, strict=True):
            self.files[t][0.0] = self.files[t].get(0.0, 0) + n

    def raise_unit(self, j: int, t: int, ram: float) -> None:
        """The unit's files to ``ram`` (only upwards: ``… AND ramCount < :ramCount``)."""
        old = self.unit_ram[j]
        if ram <= old:
            return
        counts, n = self.files[t], self.unit_files[j]
        counts[old] -= n
        if not counts[old]:
            del counts[old]
        counts[ram] = counts.get(ram, 0) + n
        self.unit_ram[j] = ram


def memory_retry(
    ledger: FileLedger,
    j: int,
    t: int,
    min_ram_count: float,
    cores: float,
    base_mb: float,
    task_ram: float,
    action: str = INCREASE_MEMORY,
    rule: RetryRam | None = None,
    ladder: Sequence[float] = LADDER_MB_PER_CORE,
    share: float = TASK_RAISE_SHARE,
) -> RamRaise:
    """A memory kill of unit ``j`` (task ``t``) under the retrial rule's ``action``: the
    files raised in ``ledger``; the task's new ramCount returned for the caller to set."""
    files = ledger.files[t]
    if action == INCREASE_MEMORY_XTIMES:
        raised = increase_memory_xtimes(
            min_ram_count, cores, task_ram, files, rule or RetryRam(), ladder, share
        )
    else:
        raised = increase_memory(min_ram_count, cores, base_mb, task_ram, files, ladder, share)
    if raised.file_ram is not None:
        ledger.raise_unit(j, t, raised.file_ram)
    return raised
