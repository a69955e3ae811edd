"""Each of PanDA's rules against hand-worked cases."""

from __future__ import annotations

import pytest

from scoutless.replay import rules

TYPES = [("SCORE", 2000.0, False), ("MCORE", 2000.0, True),
         ("SCORE_HIMEM", 3000.0, False), ("MCORE_HIMEM", 3000.0, True)]  # fmt: skip


def test_a_job_at_1_9_times_its_allocation_survives_k2_and_dies_at_k1():
    allocation = rules.allocation_mb(2000, 2000, cores=1, base_mb=0)
    assert allocation == 2000
    assert rules.memory_kill_time(3600.0, 1.9 * allocation, allocation, factor=2.0) is None
    killed = rules.memory_kill_time(3600.0, 1.9 * allocation, allocation, factor=1.0)
    # PSS grows linearly to 3800 MB over the hour: it crosses 2000 MB at 3600 × 2000/3800 s
    assert killed == pytest.approx(3600.0 * 2000 / 3800)


def test_allocation_is_base_plus_cores_times_the_larger_of_request_and_slot():
    assert rules.allocation_mb(1500, 2000, cores=8, base_mb=500) == 500 + 8 * 2000
    assert rules.allocation_mb(5000, 3000, cores=2, base_mb=0) == 10000


def test_the_avalanche_comes_at_the_5th_finished_scout_or_when_all_are_resolved():
    assert not rules.avalanche_due(4, 10, 4, 0.5)
    assert rules.avalanche_due(5, 10, 5, 0.5)
    assert rules.avalanche_due(2, 10, 10, 0.5)  # 8 failed for good: all resolved
    assert rules.avalanche_due(2, 3, 2, 0.5)  # 3 scouts: 2 ≥ 1.5


def test_resource_types_by_width_and_memory():
    assert TYPES[rules.resource_type(1, 1500, TYPES)][0] == "SCORE"
    assert TYPES[rules.resource_type(8, 2000, TYPES)][0] == "MCORE"
    assert TYPES[rules.resource_type(1, 2500, TYPES)][0] == "SCORE_HIMEM"
    assert TYPES[rules.resource_type(8, 9000, TYPES)][0] == "MCORE_HIMEM"  # the largest


def test_job_walltime_follows_getJobMaxWalltime():
    # 10 HS06s/event × 1000 events / 1 core / 10 HS06 / 0.9 + 600 s
    wall = rules.job_max_walltime(10.0, 1000, 1, 10.0, 90.0, 600.0, 1e9)
    assert wall == pytest.approx(10.0 * 1000 / 10.0 / 0.9 + 600.0)
    assert rules.job_max_walltime(float("nan"), 1000, 1, 10.0, 90.0, 600.0, 7200.0) == 7200.0
    assert rules.job_max_walltime(1e6, 1000, 1, 10.0, 90.0, 600.0, 7200.0) == 7200.0


def test_scout_exits():
    assert rules.scouts_broken(0, 3, None)
    assert not rules.scouts_broken(1, 9, None)
    assert rules.scouts_broken(4, 6, 0.5)
    assert rules.scouts_exhausted(2000, 4500, 4000, n_new_jobs=21, min_new_jobs=20)
    assert not rules.scouts_exhausted(2000, 4500, 4000, n_new_jobs=20, min_new_jobs=20)
    assert not rules.scouts_exhausted(4500, 5000, 4000, n_new_jobs=50, min_new_jobs=20)
