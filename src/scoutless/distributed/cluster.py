"""Where ``--scheduler`` points: nowhere (one process), a LocalCluster, or a running cluster.

* absent          -> ``None``: the single-process path, no Dask imported;
* ``local``       -> a :class:`distributed.LocalCluster` with one worker per core;
* ``local:N``     -> a LocalCluster of ``N`` one-thread workers;
* anything else   -> the address of an existing scheduler (``tcp://host:8786``, or
  what dask-jobqueue / dask-gateway / the Dask Kubernetes operator print).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scoutless.config import DistributedSettings

if TYPE_CHECKING:
    from distributed import Client


class SchedulerError(ValueError):
    """A ``--scheduler`` value that names no usable cluster."""


@dataclass(frozen=True)
class SchedulerSpec:
    """Parsed ``--scheduler``: a local cluster of ``n_workers`` or a remote ``address``."""

    address: str | None = None
    n_workers: int | None = None

    @property
    def is_local(self) -> bool:
        return self.address is None


def parse_scheduler(text: str | None) -> SchedulerSpec | None:
    """``None`` / ``local`` / ``local:N`` / an address; a clear error for anything else."""
    if text is None or not text.strip():
        return None
    text = text.strip()
    if text == "local":
        return SchedulerSpec(n_workers=os.cpu_count() or 1)
    if text.startswith("local:"):
        count = text.removeprefix("local:")
        if not count.isdigit() or int(count) < 1:
            raise SchedulerError(f"--scheduler {text!r}: expected local:N with N >= 1")
        return SchedulerSpec(n_workers=int(count))
    if "://" not in text and ":" not in text:
        raise SchedulerError(
            f"--scheduler {text!r}: expected 'local', 'local:N' or a scheduler address "
            "such as tcp://host:8786"
        )
    return SchedulerSpec(address=text if "://" in text else f"tcp://{text}")


@contextlib.contextmanager
def connect(spec: SchedulerSpec, settings: DistributedSettings) -> Iterator[Client]:
    """A client on the cluster ``spec`` names; a local cluster lives as long as the block."""
    from distributed import Client, LocalCluster

    # shuffles log a warning per run at WARNING level: routine here, not news
    logging.getLogger("distributed.shuffle").setLevel(logging.ERROR)
    if spec.address is not None:
        try:
            client = Client(spec.address, timeout=settings.connect_timeout_s)
        except OSError as exc:
            raise SchedulerError(f"--scheduler {spec.address}: cannot connect ({exc})") from exc
        with client:
            yield client
        return
    with (
        LocalCluster(
            n_workers=spec.n_workers,
            threads_per_worker=1,
            memory_limit=settings.worker_memory_limit,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client
