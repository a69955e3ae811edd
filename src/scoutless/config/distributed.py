"""Distributed (multi-node) training (``settings.distributed``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class DistributedSettings(BaseModel):
    """The Dask / torch-distributed path (``--scheduler``); unused by the single-process one."""

    partition_tasks: int = Field(
        50_000, ge=1, description="tasks per build partition (all their job rows at once)"
    )
    worker_memory_limit: str = Field(
        "4GB", description="per worker of a --scheduler local[:N] cluster; spills beyond it"
    )
    connect_timeout_s: float = Field(30.0, gt=0)
    torchrun_nproc_per_node: int = Field(2, ge=1, description="DNN ranks on this node")
    torchrun_args: list[str] = Field(
        default_factory=list,
        description="extra torchrun arguments, e.g. --nnodes 4 --rdzv-endpoint host:29500 "
        "(default: --standalone, one node)",
    )
    dnn_shards: int = Field(16, ge=1, description="Parquet shards of the DNN's rows (>= ranks)")
    dnn_work_root: Path | None = Field(
        None, description="where DNN work folders go (shared by all nodes); default: temp"
    )
