"""Session fixtures of the scale-out tests: one LocalCluster (2 one-thread workers) and the
generated history of :mod:`scale_history`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scale_history import db_build, generated_history  # noqa: F401


@pytest.fixture(scope="session")
def dask_cluster() -> Iterator[object]:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=None, memory_limit="2GB"
    ) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def dask_client(dask_cluster) -> Iterator[object]:
    from distributed import Client

    with Client(dask_cluster) as client:
        yield client
