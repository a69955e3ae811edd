"""Training and inference around :class:`TabularMLP`: data prep, the epoch loop, early stopping.

Tensors are prepared once (missing numericals -> 0 plus a missing flag per column); each
epoch shuffles row indices with a seeded generator. Early stopping watches validation
accuracy with patience and restores the best weights; a temperature fitted on the
validation logits then calibrates the softmax.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from scoutless.features.encoders import SMALL_BATCH, EncodedFeatures, signed_log1p
from scoutless.models.base import check_labels
from scoutless.models.dnn import TabularMLP
from scoutless.models.temperature import fit_temperature, softmax

EpochCallback = Callable[[int, dict[str, float]], None]
PREDICT_BATCH = 65_536
#: small tables get smaller batches: at least this many optimiser steps per epoch
MIN_STEPS_PER_EPOCH = 32


@dataclass(frozen=True)
class DNNParams:
    """Hyperparameters of one DNN fit (what the random search varies)."""

    learning_rate: float = 3e-3
    weight_decay: float = 1e-5
    #: large batches keep CPU training fast (2048: ~2x the samples/s of 512, same accuracy
    #: on 200k synthetic tasks with the learning rate raised to match)
    batch_size: int = 2048
    d_hidden: tuple[int, ...] = (256, 128, 64)
    dropouts: tuple[float, ...] = (0.4, 0.3, 0.3)
    max_epochs: int = 40
    patience: int = 4
    #: weight of an auxiliary regression on the standardised log target value (0: off);
    #: it tells the network how far inside its class each task lies (ordinal information)
    aux_weight: float = 0.0
    #: epochs without a better validation accuracy before the learning rate is cut by
    #: ``lr_decay`` (0: never); below ``patience`` so a plateau gets a smaller step first
    lr_decay_patience: int = 2
    lr_decay: float = 0.3

    def __post_init__(self) -> None:
        if self.learning_rate <= 0 or self.weight_decay < 0:
            raise ValueError(f"{self.learning_rate=} must be > 0 and {self.weight_decay=} >= 0")
        if self.batch_size < 2 or self.max_epochs < 1 or self.patience < 1:
            raise ValueError(f"{self.batch_size=} >= 2, {self.max_epochs=}, {self.patience=} >= 1")

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DNNParams:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


def numeric_input(numeric: np.ndarray) -> np.ndarray:
    """(n, m) standardised numericals with NaN -> (n, 2m): values (NaN -> 0) ⊕ missing flags."""
    missing = np.isnan(numeric)
    return np.hstack([np.where(missing, 0.0, numeric), missing]).astype(np.float32)


def effective_batch_size(batch_size: int, n_rows: int) -> int:
    """``batch_size``, shrunk so a small table still gets MIN_STEPS_PER_EPOCH steps per epoch."""
    return max(2, min(batch_size, max(64, n_rows // MIN_STEPS_PER_EPOCH)))


def aux_target(values: np.ndarray) -> np.ndarray:
    """Standardised sign·log1p of the target values (NaN stays NaN: no auxiliary loss there)."""
    logged = signed_log1p(np.asarray(values, dtype=float))
    finite = logged[np.isfinite(logged)]
    if finite.size < 2:
        return np.full(len(logged), np.nan, dtype=np.float32)
    return ((logged - finite.mean()) / max(finite.std(), 1e-9)).astype(np.float32)


def _tensors(X: EncodedFeatures) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.from_numpy(np.ascontiguousarray(X.codes)), torch.from_numpy(
        numeric_input(X.numeric)
    )


@dataclass(frozen=True)
class InferenceWeights:
    """Eval-mode TabularMLP as numpy arrays, batch-norm folded into the preceding Linear."""

    embeddings: list[np.ndarray]
    layers: list[tuple[np.ndarray, np.ndarray]]  # (weight (d_in, d_out), bias); ReLU between

    @classmethod
    def of(cls, module: TabularMLP) -> InferenceWeights:
        layers = []
        mods = list(module.blocks)
        with torch.no_grad():
            for linear, norm in zip(mods[0::4], mods[1::4], strict=True):
                scale = norm.weight / torch.sqrt(norm.running_var + norm.eps)
                weight = linear.weight * scale[:, None]
                bias = (linear.bias - norm.running_mean) * scale + norm.bias
                layers.append((weight.T.numpy().copy(), bias.numpy().copy()))
            layers.append((module.head.weight.T.numpy().copy(), module.head.bias.numpy().copy()))
            embeddings = [e.weight.numpy().copy() for e in module.embeddings]
        return cls(embeddings, layers)

    def logits(self, codes: np.ndarray, numeric: np.ndarray) -> np.ndarray:
        parts = [table[codes[:, j]] for j, table in enumerate(self.embeddings)]
        if numeric.shape[1]:
            parts.append(numeric)
        x = np.concatenate(parts, axis=1)
        for weight, bias in self.layers[:-1]:
            x = np.maximum(x @ weight + bias, 0.0)
        weight, bias = self.layers[-1]
        return (x @ weight + bias).astype(np.float64)


class DNNModel:
    """Per-target classifier: :class:`TabularMLP` trained with class-weighted cross-entropy."""

    name: ClassVar[str] = "dnn"

    def __init__(
        self,
        *,
        n_classes: int,
        cardinalities: Sequence[int],
        n_numerical: int,
        params: DNNParams | None = None,
        seed: int = 42,
        on_epoch: EpochCallback | None = None,
    ) -> None:
        self.n_classes = n_classes
        self.cardinalities = list(cardinalities)
        self.n_numerical = n_numerical
        self.params = params or DNNParams()
        self.seed = seed
        self.on_epoch = on_epoch
        self.classes_ = np.arange(n_classes)

    def _new_module(self, d_aux: int = 0) -> TabularMLP:
        return TabularMLP(
            cardinalities=self.cardinalities,
            d_numerical=2 * self.n_numerical,
            n_classes=self.n_classes,
            d_hidden=self.params.d_hidden,
            dropouts=self.params.dropouts,
            d_aux=d_aux,
        )

    def fit(
        self,
        X: EncodedFeatures,
        y: np.ndarray,
        *,
        eval_set: tuple[EncodedFeatures, np.ndarray],
        class_weight: np.ndarray | None = None,
        values: np.ndarray | None = None,
    ) -> DNNModel:
        """``values``: the target's continuous values of the rows, for the auxiliary loss."""
        y = check_labels(y, self.n_classes, "dnn.fit")
        X_val, y_val = eval_set
        y_val = check_labels(y_val, self.n_classes, "dnn.fit eval_set")
        aux = aux_target(values) if self.params.aux_weight > 0 and values is not None else None
        torch.manual_seed(self.seed)
        self.d_aux_ = 0 if aux is None else 1
        self.batch_size_ = effective_batch_size(self.params.batch_size, len(y))
        self.module_ = self._new_module(self.d_aux_)
        self._inference = None
        codes, numeric = _tensors(X)
        labels = torch.from_numpy(y)
        self._aux = None if aux is None else torch.from_numpy(aux)
        weight = (
            None if class_weight is None else torch.as_tensor(class_weight, dtype=torch.float32)
        )
        loss_fn = nn.CrossEntropyLoss(weight=weight)
        optimizer = torch.optim.Adam(
            self.module_.parameters(),
            lr=self.params.learning_rate,
            weight_decay=self.params.weight_decay,
        )
        shuffler = torch.Generator().manual_seed(self.seed)
        scheduler = (
            torch.optim.lr_scheduler.ReduceLROnPlateau(
                optimizer, mode="max", factor=self.params.lr_decay,
                patience=self.params.lr_decay_patience - 1,
            )
            if self.params.lr_decay_patience > 0
            else None
        )  # fmt: skip
        best_acc, best_state, best_epoch, stale = -1.0, None, 0, 0
        self.history_: list[dict[str, float]] = []
        for epoch in range(1, self.params.max_epochs + 1):
            started = time.perf_counter()
            train_loss = self._train_epoch(codes, numeric, labels, loss_fn, optimizer, shuffler)
            seconds = time.perf_counter() - started
            val_acc = float((self.predict_logits(X_val).argmax(axis=1) == y_val).mean())
            record = {
                "epoch": epoch,
                "train_loss": train_loss,
                "val_accuracy": val_acc,
                "train_seconds": round(seconds, 4),
                "samples_per_s": round(len(labels) / max(seconds, 1e-9), 1),
            }
            self.history_.append(record)
            if self.on_epoch is not None:
                self.on_epoch(epoch, record)
            if scheduler is not None:
                scheduler.step(val_acc)
            if val_acc > best_acc:
                best_acc, best_epoch, stale = val_acc, epoch, 0
                best_state = copy.deepcopy(self.module_.state_dict())
            else:
                stale += 1
                if stale >= self.params.patience:
                    break
        if best_state is not None:
            self.module_.load_state_dict(best_state)
            self._inference = None
        self.module_.eval()
        self._aux = None
        self.best_epoch_ = best_epoch
        self.temperature_ = fit_temperature(self.predict_logits(X_val), y_val)
        return self

    def _train_epoch(self, codes, numeric, labels, loss_fn, optimizer, shuffler) -> float:
        self._inference = None  # the weights change: the numpy copy is stale
        self.module_.train()
        n = len(labels)
        order = torch.randperm(n, generator=shuffler)
        size = self.batch_size_
        total, seen = 0.0, 0
        for start in range(0, n, size):
            idx = order[start : start + size]
            if len(idx) < 2:  # batch-norm cannot train on one row
                continue
            optimizer.zero_grad(set_to_none=True)
            logits, aux = self.module_.forward_with_aux(codes[idx], numeric[idx])
            loss = loss_fn(logits, labels[idx])
            if aux is not None and self._aux is not None:
                target = self._aux[idx]
                known = ~torch.isnan(target)
                if known.any():
                    error = nn.functional.smooth_l1_loss(aux[known, 0], target[known])
                    loss = loss + self.params.aux_weight * error
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(idx)
            seen += len(idx)
        return total / max(seen, 1)

    def predict_logits(self, X: EncodedFeatures) -> np.ndarray:
        """(n, n_classes) raw logits, in eval mode without autograd."""
        if len(X) <= SMALL_BATCH:
            return self._small_batch_logits(X)
        self.module_.eval()
        codes, numeric = _tensors(X)
        with torch.inference_mode():
            if len(codes) <= PREDICT_BATCH:
                return self.module_(codes, numeric).numpy().astype(np.float64)
            parts = [
                self.module_(codes[s : s + PREDICT_BATCH], numeric[s : s + PREDICT_BATCH])
                for s in range(0, len(codes), PREDICT_BATCH)
            ]
            return torch.cat(parts).numpy().astype(np.float64)

    def _small_batch_logits(self, X: EncodedFeatures) -> np.ndarray:
        """The eval-mode forward pass in numpy: a few rows cost ~10x less than via torch."""
        if getattr(self, "_inference", None) is None:
            self._inference = InferenceWeights.of(self.module_)
        return self._inference.logits(X.codes, numeric_input(X.numeric))

    def predict_proba(self, X: EncodedFeatures) -> np.ndarray:
        return softmax(self.predict_logits(X) / getattr(self, "temperature_", 1.0))

    def hyperparameters(self) -> dict[str, Any]:
        return {
            **self.params.to_dict(),
            "embedding_dims": [e.embedding_dim for e in self._new_module().embeddings],
            "batch_size_used": getattr(self, "batch_size_", None),
            "best_epoch": getattr(self, "best_epoch_", None),
            "temperature": getattr(self, "temperature_", None),
            "seed": self.seed,
        }

    def with_params(self, params: DNNParams) -> DNNModel:
        """An unfitted copy with other hyperparameters (for the search)."""
        clone = copy.copy(self)
        clone.params = replace(params)
        for attr in ("module_", "best_epoch_", "temperature_", "history_", "_inference", "_aux"):
            clone.__dict__.pop(attr, None)
        return clone

    def save(self, folder: Path) -> list[str]:
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.module_.state_dict(), folder / "dnn.pt")
        meta = {
            "n_classes": self.n_classes,
            "cardinalities": self.cardinalities,
            "n_numerical": self.n_numerical,
            "params": self.params.to_dict(),
            "seed": self.seed,
            "d_aux": self.d_aux_,
            "best_epoch": self.best_epoch_,
            "temperature": self.temperature_,
            "history": self.history_,
        }
        (folder / "dnn.json").write_text(json.dumps(meta, indent=1))
        return ["dnn.pt", "dnn.json"]

    @classmethod
    def load(cls, folder: Path) -> DNNModel:
        meta = json.loads((folder / "dnn.json").read_text())
        model = cls(
            n_classes=meta["n_classes"],
            cardinalities=meta["cardinalities"],
            n_numerical=meta["n_numerical"],
            params=DNNParams.from_dict(meta["params"]),
            seed=meta["seed"],
        )
        model.d_aux_ = int(meta.get("d_aux", 0))
        model.module_ = model._new_module(model.d_aux_)
        model.module_.load_state_dict(torch.load(folder / "dnn.pt", weights_only=True))
        model.module_.eval()
        model.best_epoch_ = meta["best_epoch"]
        model.temperature_ = float(meta["temperature"])
        model.history_ = meta["history"]
        return model
