"""The DNN on torch distributed: ``torchrun --nnodes N --nproc_per_node K`` ranks, each
training the same :class:`~scoutless.models.dnn.TabularMLP` on its share of the rows.

Each rank runs the single path's epoch loop (:func:`~scoutless.models.dnn_trainer.fit_module`:
same loss, class weights, optimiser, plateau decay, early stopping) on a DDP-wrapped
module, so gradients are averaged across ranks every step; the per-rank batch is the
global batch divided by the world size. Ranks pad their share to the longest share (as
``DistributedSampler`` does) so all take the same number of steps. Validation accuracy is
computed on rank 0 after its batch-norm statistics are broadcast, and broadcast back: all
ranks stop at the same epoch with equal weights. Rank 0 then fits the temperature and
saves an ordinary :class:`~scoutless.models.dnn_model.DNNModel` (the bundle's format).

Backend: nccl when every rank has a GPU, gloo on CPU.
Run by :func:`fit_dnn_with_torchrun`, or on a cluster by hand on every node::

    torchrun --nnodes 4 --nproc_per_node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\
        -m scoutless.distributed.ddp WORK_DIR
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from scoutless.distributed.ddp_data import RankData, read_rank_share, write_shards
from scoutless.features.encoded import EncodedFeatures
from scoutless.models.dnn import TabularMLP
from scoutless.models.dnn_inputs import feature_tensors
from scoutless.models.dnn_model import DNNModel
from scoutless.models.dnn_params import DNNParams
from scoutless.models.dnn_trainer import TrainTensors, effective_batch_size, fit_module
from scoutless.models.temperature import fit_temperature

MODEL_DIR = "model"


class TorchrunError(RuntimeError):
    """The torchrun job failed; its output is in the message."""


class _BothHeads(nn.Module):
    """Forward = the MLP's forward_with_aux, so DDP sees (and syncs) both heads."""

    def __init__(self, mlp: TabularMLP) -> None:
        super().__init__()
        self.mlp = mlp

    def forward(self, codes: torch.Tensor, numeric: torch.Tensor):  # type: ignore[no-untyped-def]
        return self.mlp.forward_with_aux(codes, numeric)


class DistributedMLP(nn.Module):
    """What the epoch loop trains: a DDP replica exposing ``forward_with_aux``."""

    def __init__(self, mlp: TabularMLP, device: torch.device) -> None:
        super().__init__()
        ids = [device.index] if device.type == "cuda" else None
        self.ddp = DistributedDataParallel(_BothHeads(mlp.to(device)), device_ids=ids)

    @property
    def mlp(self) -> TabularMLP:
        return self.ddp.module.mlp

    def forward_with_aux(self, codes: torch.Tensor, numeric: torch.Tensor):  # type: ignore[no-untyped-def]
        return self.ddp(codes, numeric)


def _padded(data: RankData, device: torch.device) -> TrainTensors:
    """This rank's rows, repeated cyclically up to the longest rank's row count."""
    n_rows = torch.tensor([len(data.y)], dtype=torch.int64, device=device)
    dist.all_reduce(n_rows, op=dist.ReduceOp.MAX)
    take = np.arange(int(n_rows.item())) % len(data.y)
    codes, numeric = feature_tensors(data.X.take(take))
    aux = None if data.aux is None else torch.from_numpy(data.aux[take])
    return TrainTensors(
        codes.to(device), numeric.to(device), torch.from_numpy(data.y[take]).to(device),
        None if aux is None else aux.to(device),
    )  # fmt: skip


def _validator(model: DistributedMLP, data: RankData, device: torch.device):  # type: ignore[no-untyped-def]
    codes, numeric = (t.to(device) for t in feature_tensors(data.X_val))

    def validate() -> float:
        for buffer in model.mlp.buffers():  # batch-norm statistics: rank 0's everywhere
            dist.broadcast(buffer, src=0)
        accuracy = torch.zeros(1, dtype=torch.float64, device=device)
        if dist.get_rank() == 0:
            model.mlp.eval()
            with torch.inference_mode():
                predicted = model.mlp(codes, numeric).argmax(dim=1).cpu().numpy()
            accuracy[0] = float((predicted == data.y_val).mean())
        dist.broadcast(accuracy, src=0)
        return float(accuracy.item())

    return validate


def _estimator(data: RankData, mlp: TabularMLP, batch_size: int, result) -> DNNModel:  # type: ignore[no-untyped-def]
    """The trained replica as the single path's estimator (temperature fitted here)."""
    spec = data.spec
    model = DNNModel(
        n_classes=spec["n_classes"], cardinalities=spec["cardinalities"],
        n_numerical=spec["n_numerical"], params=DNNParams.from_dict(spec["params"]),
        seed=spec["seed"],
    )  # fmt: skip
    model.module_ = mlp.cpu().eval()
    model.d_aux_ = 0 if mlp.aux_head is None else mlp.aux_head.out_features
    model.batch_size_ = batch_size
    model.best_epoch_, model.history_ = result.best_epoch, result.history
    model.classes_ = np.arange(model.n_classes)
    model._inference = None
    model.temperature_ = fit_temperature(model.predict_logits(data.X_val), data.y_val)
    return model


def train_rank(work: Path) -> None:
    """One torchrun rank: read its share, train with DDP, save replica (and rank 0 the model)."""
    cuda = torch.cuda.is_available()
    dist.init_process_group(backend="nccl" if cuda else "gloo")
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if cuda else "cpu")
        data = read_rank_share(work, rank, world)
        params = DNNParams.from_dict(data.spec["params"])
        torch.manual_seed(data.spec["seed"] + rank)  # dropout differs by rank; init is rank 0's
        mlp = DNNModel(
            n_classes=data.spec["n_classes"], cardinalities=data.spec["cardinalities"],
            n_numerical=data.spec["n_numerical"], params=params, seed=data.spec["seed"],
        )._new_module(0 if data.aux is None else 1)  # fmt: skip
        model = DistributedMLP(mlp, device)
        tensors = _padded(data, device)
        local = replace(params, batch_size=max(2, params.batch_size // world))
        weight = data.spec["class_weight"]
        result = fit_module(
            model, tensors, local, validate=_validator(model, data, device),
            class_weight=None if weight is None else torch.tensor(weight, device=device),
            seed=data.spec["seed"] + rank,
        )  # fmt: skip
        torch.save(model.mlp.state_dict(), work / f"replica-{rank}.pt")
        if rank == 0:
            batch = effective_batch_size(local.batch_size, len(tensors)) * world
            _estimator(data, model.mlp, batch, result).save(work / MODEL_DIR)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def run_torchrun(work: Path, nproc_per_node: int, extra_args: tuple[str, ...] = ()) -> None:
    """``torchrun --standalone --nproc_per_node K -m scoutless.distributed.ddp work``."""
    command = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc_per_node),
        *(extra_args or ("--standalone",)), "-m", "scoutless.distributed.ddp", str(work),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-4000:]
        raise TorchrunError(f"torchrun exited with {done.returncode}:\n{tail}")


def fit_dnn_with_torchrun(
    model: DNNModel,
    X: EncodedFeatures,
    y: np.ndarray,
    *,
    eval_set: tuple[EncodedFeatures, np.ndarray],
    class_weight: np.ndarray | None = None,
    values: np.ndarray | None = None,
    nproc_per_node: int = 2,
    extra_args: tuple[str, ...] = (),
    n_shards: int = 16,
    work: Path | None = None,
) -> DNNModel:
    """Fit ``model``'s configuration with DDP ranks; returns the trained estimator.

    ``work`` (kept afterwards) must be readable by every node; default: a temporary folder."""
    with contextlib.ExitStack() as stack:
        if work is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="scoutless-ddp-")))
        write_shards(
            work, model, X, y, eval_set=eval_set, class_weight=class_weight, values=values,
            n_shards=n_shards,
        )  # fmt: skip
        run_torchrun(work, nproc_per_node, extra_args)
        trained = DNNModel.load(work / MODEL_DIR)
    trained.on_epoch = model.on_epoch
    return trained


if __name__ == "__main__":
    train_rank(Path(sys.argv[1]))
