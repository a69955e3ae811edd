"""The DNN's training loop: shuffled mini-batches, plateau LR decay, early stopping.

Works on a bare ``nn.Module`` and tensors, so any wrapper (the estimator, a distributed
trainer) can reuse it. Each epoch shuffles row indices with a seeded generator; early
stopping watches validation accuracy with patience and restores the best weights.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from scoutless.models.dnn_params import DNNParams

EpochCallback = Callable[[int, dict[str, float]], None]
#: small tables get smaller batches: at least this many optimiser steps per epoch
MIN_STEPS_PER_EPOCH = 32


def effective_batch_size(batch_size: int, n_rows: int) -> int:
    """``batch_size``, shrunk so a small table still gets MIN_STEPS_PER_EPOCH steps per epoch."""
    return max(2, min(batch_size, max(64, n_rows // MIN_STEPS_PER_EPOCH)))


@dataclass(frozen=True)
class TrainTensors:
    """The fit rows as tensors; ``aux`` (NaN where unknown) only when the aux loss is on."""

    codes: torch.Tensor
    numeric: torch.Tensor
    labels: torch.Tensor
    aux: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class LoopResult:
    """What the loop learned besides the weights (which it leaves in the module)."""

    best_epoch: int
    history: list[dict[str, float]]


def batch_loss(
    module: nn.Module, data: TrainTensors, idx: torch.Tensor, loss_fn: nn.Module, aux_weight: float
) -> torch.Tensor:
    """Classification loss of the rows ``idx``, plus the weighted auxiliary regression."""
    logits, aux = module.forward_with_aux(data.codes[idx], data.numeric[idx])
    loss = loss_fn(logits, data.labels[idx])
    if aux is not None and data.aux is not None:
        target = data.aux[idx]
        known = ~torch.isnan(target)
        if known.any():
            loss = loss + aux_weight * module.aux_loss(aux[known], target[known])
    return loss


def train_epoch(
    module: nn.Module,
    data: TrainTensors,
    *,
    loss_fn: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch_size: int,
    shuffler: torch.Generator,
    aux_weight: float = 0.0,
    step_scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
) -> float:
    """One pass over ``data`` in shuffled batches; the mean training loss.

    ``step_scheduler`` (a per-step schedule such as one-cycle) steps after every batch.
    """
    module.train()
    n = len(data)
    order = torch.randperm(n, generator=shuffler)
    total, seen = 0.0, 0
    for start in range(0, n, batch_size):
        idx = order[start : start + batch_size]
        if len(idx) < 2:  # batch-norm cannot train on one row
            continue
        optimizer.zero_grad(set_to_none=True)
        loss = batch_loss(module, data, idx, loss_fn, aux_weight)
        loss.backward()
        optimizer.step()
        if step_scheduler is not None:
            step_scheduler.step()
        total += float(loss.detach()) * len(idx)
        seen += len(idx)
    return total / max(seen, 1)


def _schedulers(optimizer: torch.optim.Optimizer, params: DNNParams, steps_per_epoch: int):
    """(per-epoch plateau scheduler, per-step scheduler) for ``params.schedule``."""
    if params.schedule == "onecycle":
        one_cycle = torch.optim.lr_scheduler.OneCycleLR(
            optimizer, max_lr=params.learning_rate, pct_start=0.3,
            total_steps=params.max_epochs * steps_per_epoch,
        )  # fmt: skip
        return None, one_cycle
    if params.lr_decay_patience <= 0:
        return None, None
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(
        optimizer, mode="max", factor=params.lr_decay, patience=params.lr_decay_patience - 1
    )
    return plateau, None


def fit_module(
    module: nn.Module,
    data: TrainTensors,
    params: DNNParams,
    *,
    validate: Callable[[], float],
    class_weight: torch.Tensor | None = None,
    seed: int = 42,
    on_epoch: EpochCallback | None = None,
) -> LoopResult:
    """Train ``module`` in place until ``validate()`` (accuracy) stops improving; best weights kept."""
    loss_fn = nn.CrossEntropyLoss(weight=class_weight)
    optimizer = torch.optim.Adam(  # fused: one kernel for all parameters, not one per tensor
        module.parameters(), lr=params.learning_rate, weight_decay=params.weight_decay, fused=True
    )
    shuffler = torch.Generator().manual_seed(seed)
    batch_size = effective_batch_size(params.batch_size, len(data))
    scheduler, per_step = _schedulers(optimizer, params, -(-len(data) // batch_size))
    best_acc, best_state, best_epoch, stale = -1.0, None, 0, 0
    history: list[dict[str, float]] = []
    for epoch in range(1, params.max_epochs + 1):
        started = time.perf_counter()
        train_loss = train_epoch(
            module, data, loss_fn=loss_fn, optimizer=optimizer, batch_size=batch_size,
            shuffler=shuffler, aux_weight=params.aux_weight, step_scheduler=per_step,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        val_acc = validate()
        record = {
            "epoch": epoch,
            "train_loss": train_loss,
            "val_accuracy": val_acc,
            "train_seconds": round(seconds, 4),
            "samples_per_s": round(len(data) / max(seconds, 1e-9), 1),
        }
        history.append(record)
        if on_epoch is not None:
            on_epoch(epoch, record)
        if scheduler is not None:
            scheduler.step(val_acc)
        if val_acc > best_acc:
            best_acc, best_epoch, stale = val_acc, epoch, 0
            best_state = copy.deepcopy(module.state_dict())
        else:
            stale += 1
            if stale >= params.patience:
                break
    if best_state is not None:
        module.load_state_dict(best_state)
    module.eval()
    return LoopResult(best_epoch, history)
