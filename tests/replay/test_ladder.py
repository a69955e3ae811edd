"""JEDI's memory retry on hand cases pinned to panda-server's code (commit 9cc3603:
``increaseRamLimitJobJEDI``, ``increaseRamLimitJobJEDI_xtimes``, ``increaseRamLimitJEDI``,
``JobUtils.compensate_ram_count``)."""

from __future__ import annotations

from scoutless.replay import ladder as L
from scoutless.replay.ladder import FileLedger, RamRaise, RetryRam

TASK_RAM = 2000.0


def kill(ledger: FileLedger, j: int, task_ram: float, **kw: object) -> RamRaise:
    """A memory kill of unit j (one core, no base) whose ramCount was what JEDI gave it."""
    ram = L.job_min_ram_count(task_ram, ledger.unit_ram[j], 1, 0)
    return L.memory_retry(ledger, j, 0, ram, 1, 0, task_ram, **kw)  # type: ignore[arg-type]


def test_the_share_counts_files_not_jobs():
    # two jobs: A reads 1 file, B 9. Counted per job, A's raise alone is 50 % > 30 %
    ledger = FileLedger([0, 0], [1, 9], 1)
    assert kill(ledger, 0, TASK_RAM) == RamRaise(file_ram=3000.0)
    assert ledger.files[0] == {0.0: 9, 3000.0: 1}
    # 1 file of 10 raised: 10 %, so B's own 9 files are raised, the task is not
    assert kill(ledger, 1, TASK_RAM) == RamRaise(file_ram=3000.0)
    assert ledger.files[0] == {3000.0: 10}


def test_a_task_whose_raised_files_are_many_is_raised_instead():
    ledger = FileLedger([0, 0], [9, 1], 1)
    assert kill(ledger, 0, TASK_RAM) == RamRaise(file_ram=3000.0)
    # 9 of 10 files above the task: the task goes to the step above the job, B's file stays
    assert kill(ledger, 1, TASK_RAM) == RamRaise(task_ram=3000.0)
    assert ledger.unit_ram == [3000.0, 0.0]


def test_the_30_percent_rule_is_read_before_the_files_own_raise():
    ledger = FileLedger([0] * 10, [1] * 10, 1)
    for j in range(3):
        assert kill(ledger, j, TASK_RAM).file_ram == 3000.0
    # 3 of 10 = 30 %, not more: the 4th job's file is raised (40 % after, but read before)
    assert kill(ledger, 3, TASK_RAM) == RamRaise(file_ram=3000.0)
    # now 40 %: the 5th raises the task, not its file
    assert kill(ledger, 4, TASK_RAM) == RamRaise(task_ram=3000.0)
    assert ledger.unit_ram[4] == 0.0
    # with the task at 3000 the files at 3000 are no longer above it: 0 %
    assert L.raised_share(ledger.files[0], 3000.0) == 0.0


def test_the_task_raise_goes_past_the_highest_file_step():
    # files raised to 6000 by earlier retries; a job at the task's 2000 is killed: the
    # task goes to the step of max(job, top file − 1) = 5999 → 6000
    files = {0.0: 6, 6000.0: 4}
    raised = L.increase_memory(L.compensate(2000), 1, 0, 2000, files)
    assert raised == RamRaise(task_ram=6000.0)


def test_the_top_of_the_ladder():
    files = {0.0: 10}
    assert L.increase_memory(L.compensate(6000), 1, 0, 2000, files) == RamRaise(file_ram=8000.0)
    assert L.increase_memory(L.compensate(8000), 1, 0, 2000, files) == RamRaise()
    assert L.increase_memory(L.compensate(9000), 1, 0, 2000, files) == RamRaise()
    # a task at the top is never raised further by increaseRamLimitJEDI
    assert L.raise_task(8000, 8000, L.LADDER_MB_PER_CORE) is None
    assert L.raise_task(8000, 9000, L.LADDER_MB_PER_CORE, no_limits=True) == 9000.0


def test_a_task_raised_past_the_next_step_leaves_the_job_alone():
    # the job was generated at 2000, the task has been raised to 4000 since
    assert L.increase_memory(L.compensate(2000), 1, 0, 4000, {0.0: 10}) == RamRaise()


def test_the_ramcount_is_decompensated_and_normalised_per_core():
    # 8 cores, baseRamCount 1000: minRamCount = int((2000 × 8 + 1000) × 0.9) = 15300
    ram = L.job_min_ram_count(2000, 0, 8, 1000)
    assert ram == 15300
    assert L.per_core(ram, 8, 1000) == 2000.0
    assert L.increase_memory(ram, 8, 1000, 2000, {0.0: 5}) == RamRaise(file_ram=3000.0)
    # the job's ramCount is the larger of the task's and its files'
    assert L.job_min_ram_count(2000, 3000, 1, 0) == 2700


def test_xtimes_scales_by_ry_over_the_task_and_caps_at_rz():
    rule = RetryRam.from_split_rule("nEventsPerJob=100,RX=2000,RY=4000,RZ=12000")
    assert rule == RetryRam(offset=2000, step=4000.0, max_mb=12000.0)
    ledger = FileLedger([0] * 10, [1] * 10, 1)
    kw = {"action": L.INCREASE_MEMORY_XTIMES, "rule": rule}
    # 2000 × 4000 / 2000 = 4000, then 8000, then 16000 capped at RZ: no ladder, no top
    assert kill(ledger, 0, TASK_RAM, **kw) == RamRaise(file_ram=4000.0)
    assert kill(ledger, 0, TASK_RAM, **kw) == RamRaise(file_ram=8000.0)
    assert kill(ledger, 0, TASK_RAM, **kw) == RamRaise(file_ram=12000.0)
    assert kill(ledger, 0, TASK_RAM, **kw) == RamRaise()  # at RZ
    # RZ is per job: on 4 cores the cap is 3000 a core
    assert L.increase_memory_xtimes(L.compensate(8000 * 4), 4, 2000, {}, rule).file_ram is None
    assert L.increase_memory_xtimes(L.compensate(2000 * 4), 4, 2000, {0.0: 1}, rule) == RamRaise(
        file_ram=3000.0
    )


def test_xtimes_raises_the_task_without_the_ladders_top():
    rule = RetryRam(step=12000.0)
    files = {0.0: 6, 9000.0: 4}  # 40 % above the task
    # 2000 × 12000 / 2000 = 12000 > the task: the task goes to 12000 (no_limits)
    assert L.increase_memory_xtimes(L.compensate(2000), 1, 2000, files, rule) == RamRaise(
        task_ram=12000.0
    )


def test_xtimes_without_ry_never_raises():
    # RY defaults to 1.0: the job's ramCount × 1 / the task's is a few MB
    assert L.increase_memory_xtimes(L.compensate(2000), 1, 2000, {0.0: 1}, RetryRam()) == RamRaise()
