"""The eval-mode forward pass of :class:`TabularMLP` in numpy, for a few rows at a time.

For a handful of rows torch's dispatcher costs more than the arithmetic; numpy's calls are
lighter. Batch
norm is folded into the Linear before it; dropout is the identity in eval mode. The
categorical embeddings are folded into the first layer too (each category's embedding
times its rows of the first weight matrix, precomputed): a task's first hidden layer is
then one gather and one sum instead of a lookup per feature, a concatenation and a
matrix product. Layers are found by their type, so a block layout this module does not
know is refused loudly rather than computed wrongly.

Importing this module imports no torch: a bundle stores these arrays beside the state dict
(:meth:`InferenceWeights.save`, ``dnn_inference.npz``) and serving loads them alone. Torch
is imported where a module is read (:meth:`InferenceWeights.of`) or a batch goes through
torch (:meth:`InferenceWeights.torch_logits`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from scoutless.models.ordinal_inference import cumulative_link_log_proba

if TYPE_CHECKING:
    import torch
    from torch import nn

    from scoutless.models.dnn import TabularMLP
    from scoutless.models.numeric_embedding import PiecewiseLinearEmbedding
    from scoutless.models.ordinal import CumulativeLinkHead

Layer = tuple[np.ndarray, np.ndarray]  # (weight (d_in, d_out), bias); ReLU between layers

#: fold the embeddings into the first layer while the folded table stays below this many
#: floats (vocabulary x width; 4M floats = 16 MB); larger vocabularies are looked up
FOLD_MAX_FLOATS = 4_000_000


def _fold(linear: nn.Linear, norm: nn.BatchNorm1d | None) -> Layer:
    """One Linear (and the batch norm after it) as a single affine map."""
    import torch

    weight, bias = linear.weight, linear.bias
    if norm is not None:
        scale = norm.weight / torch.sqrt(norm.running_var + norm.eps)
        weight = weight * scale[:, None]
        bias = (bias - norm.running_mean) * scale + norm.bias
    return weight.T.numpy().copy(), bias.numpy().copy()


def hidden_layers(blocks: nn.Sequential) -> list[Layer]:
    """[Linear, BatchNorm1d?, ReLU, Dropout?] groups of ``blocks`` as folded affine maps."""
    from torch import nn

    from scoutless.models.dnn import Dropout

    layers: list[Layer] = []
    mods = list(blocks)
    i = 0
    while i < len(mods):
        linear = mods[i]
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"block {i}: expected Linear, found {type(linear).__name__}")
        i += 1
        norm = mods[i] if i < len(mods) and isinstance(mods[i], nn.BatchNorm1d) else None
        i += norm is not None
        if i >= len(mods) or not isinstance(mods[i], nn.ReLU):
            raise TypeError(f"block {i}: expected ReLU after Linear")
        i += 1
        i += i < len(mods) and isinstance(mods[i], Dropout | nn.Dropout)
        layers.append(_fold(linear, norm))
    return layers


@dataclass(frozen=True)
class PLEWeights:
    """A :class:`PiecewiseLinearEmbedding` as arrays: edges (m, T+1), weight (m, T, d), bias."""

    edges: np.ndarray
    weight: np.ndarray
    bias: np.ndarray

    @classmethod
    def of(cls, ple: PiecewiseLinearEmbedding) -> PLEWeights:
        return cls(*(t.detach().numpy().copy() for t in (ple.edges, ple.weight, ple.bias)))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        left = self.edges[:, :-1]
        width = np.maximum(self.edges[:, 1:] - left, 1e-6)
        encoded = np.clip((x[:, :, None] - left) / width, 0.0, 1.0)
        out = np.einsum("bmt,mtd->bmd", encoded, self.weight) + self.bias
        return np.maximum(out, 0.0).reshape(len(x), -1)

    def torch(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`__call__` on a tensor (the arrays shared, not copied)."""
        import torch

        edges = torch.from_numpy(self.edges)
        left = edges[:, :-1]
        width = (edges[:, 1:] - left).clamp(min=1e-6)
        encoded = ((x[:, :, None] - left) / width).clamp(0.0, 1.0)
        out = torch.einsum("bmt,mtd->bmd", encoded, torch.from_numpy(self.weight))
        return (out + torch.from_numpy(self.bias)).relu().reshape(len(x), -1)


@dataclass(frozen=True)
class OrdinalWeights:
    """A :class:`CumulativeLinkHead` as arrays: location and log-scale maps, cut points."""

    location: Layer
    log_scale: Layer
    cuts: np.ndarray

    @classmethod
    def of(cls, head: CumulativeLinkHead) -> OrdinalWeights:
        return cls(_fold(head.location, None), _fold(head.log_scale, None), head.cuts().numpy())

    def __call__(self, x: np.ndarray) -> np.ndarray:
        location = (x @ self.location[0] + self.location[1])[:, 0]
        log_scale = (x @ self.log_scale[0] + self.log_scale[1])[:, 0]
        return cumulative_link_log_proba(location, log_scale, self.cuts)


@dataclass(frozen=True)
class FoldedEmbeddings:
    """Every category's contribution to the first layer: ``table[offsets[j] + code]``."""

    table: np.ndarray  # (sum of cardinalities, width)
    offsets: np.ndarray  # (n_categorical,)

    @classmethod
    def of(cls, embeddings: list[np.ndarray], first: np.ndarray) -> FoldedEmbeddings:
        """``first``: the first layer's rows for the embeddings, in embedding order."""
        parts, start = [], 0
        for table in embeddings:
            width = table.shape[1]
            parts.append(table @ first[start : start + width])
            start += width
        sizes = [len(t) for t in embeddings]
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        return cls(np.concatenate(parts).astype(np.float32), offsets)

    def __call__(self, codes: np.ndarray) -> np.ndarray:
        return self.table[codes + self.offsets].sum(axis=1)


@dataclass(frozen=True)
class InferenceWeights:
    """Eval-mode TabularMLP as numpy arrays, batch-norm folded into the preceding Linear.

    ``layers`` are the hidden layers then, for the linear head, the head itself; an ordinal
    head is ``ordinal`` instead. ``ple`` embeds the first ``n_embedded`` numerical columns.
    With ``folded``, the first layer's weight holds only the numerical inputs' rows and the
    embeddings are ``folded`` (``embeddings`` is then empty).
    """

    embeddings: list[np.ndarray]
    layers: list[Layer]
    ple: PLEWeights | None = None
    n_embedded: int = 0
    ordinal: OrdinalWeights | None = None
    folded: FoldedEmbeddings | None = None

    @classmethod
    def of(cls, module: TabularMLP, *, fold: bool = True) -> InferenceWeights:
        import torch

        from scoutless.models.ordinal import CumulativeLinkHead

        with torch.no_grad():
            layers = hidden_layers(module.blocks)
            head = module.head
            ordinal = OrdinalWeights.of(head) if isinstance(head, CumulativeLinkHead) else None
            if ordinal is None:
                layers.append(_fold(head, None))
            embeddings = [e.weight.numpy().copy() for e in module.embeddings]
            ple = None if module.ple is None else PLEWeights.of(module.ple)
        folded = None
        d_embedded = sum(e.shape[1] for e in embeddings)
        width = layers[0][0].shape[1]
        if fold and embeddings and sum(map(len, embeddings)) * width <= FOLD_MAX_FLOATS:
            weight, bias = layers[0]
            folded = FoldedEmbeddings.of(embeddings, weight[:d_embedded])
            layers[0] = (np.ascontiguousarray(weight[d_embedded:]), bias)
            embeddings = []
        return cls(embeddings, layers, ple, module.n_embedded, ordinal, folded)

    def save(self, path: Path) -> None:
        """Every array in one uncompressed ``.npz``, read back by :meth:`load` (no torch)."""
        arrays = {"n_embedded": np.asarray(self.n_embedded)}
        arrays |= {f"embedding.{i}": table for i, table in enumerate(self.embeddings)}
        for i, (weight, bias) in enumerate(self.layers):
            arrays |= {f"layer.{i}.weight": weight, f"layer.{i}.bias": bias}
        if self.ple is not None:
            ple = self.ple
            arrays |= {"ple.edges": ple.edges, "ple.weight": ple.weight, "ple.bias": ple.bias}
        if self.ordinal is not None:
            (lw, lb), (sw, sb) = self.ordinal.location, self.ordinal.log_scale
            arrays |= {"ordinal.location.weight": lw, "ordinal.location.bias": lb,
                       "ordinal.log_scale.weight": sw, "ordinal.log_scale.bias": sb,
                       "ordinal.cuts": self.ordinal.cuts}  # fmt: skip
        if self.folded is not None:
            arrays |= {"folded.table": self.folded.table, "folded.offsets": self.folded.offsets}
        np.savez(path, **arrays)

    @classmethod
    def load(cls, path: Path) -> InferenceWeights:
        """The weights :meth:`save` wrote to ``path``; a ``ValueError`` naming it if any
        array is missing."""
        with np.load(path, allow_pickle=False) as npz:
            a = dict(npz)
        try:
            n_layers = sum(k.startswith("layer.") and k.endswith(".weight") for k in a)
            layers = [(a[f"layer.{i}.weight"], a[f"layer.{i}.bias"]) for i in range(n_layers)]
            n_tables = sum(k.startswith("embedding.") for k in a)
            ple = ordinal = folded = None
            if "ple.edges" in a:
                ple = PLEWeights(a["ple.edges"], a["ple.weight"], a["ple.bias"])
            if "ordinal.cuts" in a:
                ordinal = OrdinalWeights(
                    (a["ordinal.location.weight"], a["ordinal.location.bias"]),
                    (a["ordinal.log_scale.weight"], a["ordinal.log_scale.bias"]),
                    a["ordinal.cuts"],
                )
            if "folded.table" in a:
                folded = FoldedEmbeddings(a["folded.table"], a["folded.offsets"])
            embeddings = [a[f"embedding.{i}"] for i in range(n_tables)]
            n_embedded = int(a["n_embedded"])
        except KeyError as exc:
            raise ValueError(f"{path}: DNN inference weights lack array {exc}") from exc
        if not layers:
            raise ValueError(f"{path}: DNN inference weights hold no layer")
        return cls(embeddings, layers, ple, n_embedded, ordinal, folded)

    def logits(self, codes: np.ndarray, numeric: np.ndarray) -> np.ndarray:
        """(n, n_classes) float64 logits from codes and :func:`numeric_input` columns."""
        parts = [table[codes[:, j]] for j, table in enumerate(self.embeddings)]
        if self.ple is not None:
            parts.append(self.ple(numeric[:, : self.n_embedded]))
            numeric = numeric[:, self.n_embedded :]
        if numeric.shape[1]:
            parts.append(numeric)
        x = np.concatenate(parts, axis=1) if parts else np.zeros((len(codes), 0), np.float32)
        hidden = self.layers if self.ordinal is not None else self.layers[:-1]
        weight, bias = hidden[0]
        first = x @ weight + bias
        if self.folded is not None:
            first += self.folded(codes)
        x = np.maximum(first, 0.0)
        for weight, bias in hidden[1:]:
            x = np.maximum(x @ weight + bias, 0.0)
        if self.ordinal is not None:
            return self.ordinal(x).astype(np.float64)
        weight, bias = self.layers[-1]
        return (x @ weight + bias).astype(np.float64)

    def torch_logits(self, codes: torch.Tensor, numeric: torch.Tensor) -> np.ndarray:
        """:meth:`logits` through torch, for batches. ``embedding_bag`` sums the folded
        table's rows without materialising (rows, features, width) as numpy's gather does,
        and batch norm is already folded: at 1,000 rows 35-45 % faster than the module's
        own forward, within float32 rounding (~1e-5) of it."""
        import torch
        import torch.nn.functional as F

        t = torch.from_numpy
        with torch.inference_mode():
            parts = [F.embedding(codes[:, j], t(table)) for j, table in enumerate(self.embeddings)]
            if self.ple is not None:
                parts.append(self.ple.torch(numeric[:, : self.n_embedded]))
                numeric = numeric[:, self.n_embedded :]
            if numeric.shape[1]:
                parts.append(numeric)
            x = torch.cat(parts, dim=1) if parts else torch.zeros((len(codes), 0))
            hidden = self.layers if self.ordinal is not None else self.layers[:-1]
            weight, bias = hidden[0]
            x = torch.addmm(t(bias), x, t(weight))
            if self.folded is not None:
                x += F.embedding_bag(
                    codes + t(self.folded.offsets), t(self.folded.table), mode="sum"
                )
            x.relu_()
            for weight, bias in hidden[1:]:
                x = torch.addmm(t(bias), x, t(weight)).relu_()
            if self.ordinal is not None:
                return self.ordinal(x.numpy()).astype(np.float64)
            weight, bias = self.layers[-1]
            return torch.addmm(t(bias), x, t(weight)).numpy().astype(np.float64)
