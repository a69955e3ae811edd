"""A worker killed mid-build: Dask recomputes its partitions and the table is exact, or (no
retries allowed) the build fails and leaves the previous table and no partial folder."""

from __future__ import annotations

import cloudpickle
import dask_faults
import pandas as pd
import pytest
from dask_faults import KillWorkerOnce
from scale_history import copy_of, db_parts

from scoutless.config import Settings
from scoutless.distributed.build import build_partitioned_table
from scoutless.history.table import TrainingTable

cloudpickle.register_pickle_by_value(dask_faults)  # workers cannot import the tests folder


@pytest.fixture
def kill_during(dask_client, tmp_path):
    """Arm the plugin for tasks named like the argument; disarm and heal the cluster after."""
    marker = tmp_path / "kill-once"

    def arm(key_part: str):  # type: ignore[no-untyped-def]
        marker.touch()
        dask_client.register_plugin(KillWorkerOnce(key_part, str(marker)), name="kill-once")
        return marker

    yield arm
    dask_client.unregister_worker_plugin("kill-once")
    dask_client.wait_for_workers(2, timeout=120)


def test_worker_killed_mid_build_is_recovered(
    dask_client, generated_history, tmp_path, kill_during
):
    marker = kill_during("stage_rows")
    parts = db_parts(generated_history)
    build_partitioned_table(dask_client, parts, tmp_path / "table", settings=Settings())
    assert not marker.exists()  # a worker did die during the build
    table = TrainingTable.load(tmp_path / "table")
    pd.testing.assert_frame_equal(table.frame, generated_history.reference.frame)


def test_worker_killed_without_retries_fails_cleanly(
    dask_cluster, dask_client, db_build, generated_history, tmp_path, kill_during
):
    from distributed.scheduler import KilledWorker

    out = copy_of(db_build, tmp_path)
    parts = db_parts(generated_history)
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    marker = kill_during("stage_finish")
    scheduler = dask_cluster.scheduler
    allowed, scheduler.allowed_failures = scheduler.allowed_failures, 0
    try:
        with pytest.raises(KilledWorker):
            build_partitioned_table(dask_client, parts, out, settings=Settings())
    finally:
        scheduler.allowed_failures = allowed
    assert not marker.exists()
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name != "kill-once"] == ["table"]
    pd.testing.assert_frame_equal(TrainingTable.load(out).frame, generated_history.reference.frame)
