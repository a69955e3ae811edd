"""The tabular DNN: categorical embeddings + numericals -> dense blocks -> class logits.

The module knows nothing of pandas or databases: it takes vocabulary sizes (fitted column
statistics) and tensors. Index 0 of every embedding is the unknown/missing value.
Options beyond the reference architecture: piecewise-linear embeddings of the first
``n_embedded`` numerical columns (:mod:`.numeric_embedding`) and an ordinal head
(:mod:`.ordinal`) in place of the linear one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from scoutless.models.numeric_embedding import PiecewiseLinearEmbedding
from scoutless.models.ordinal import CumulativeLinkHead, gaussian_nll

HEADS = ("softmax", "ordinal")


def embedding_dim(cardinality: int) -> int:
    """min(32, floor(log2 v) + 1) for a vocabulary of ``v`` entries (unknown included)."""
    if cardinality < 1:
        raise ValueError(f"{cardinality=} must be positive")
    return min(32, math.floor(math.log2(cardinality)) + 1)


class Dropout(nn.Module):
    """Inverted dropout from a uniform draw: same maths as ``nn.Dropout``, about twice as fast
    on CPU (torch's ``bernoulli_`` dominated the training step). The scaled float mask is made
    in place, floor(u + 1 - p) / (1 - p), so the step has no boolean mask to convert and one
    multiplication forward and back. ``generator``: the fit's own
    random stream (set by the trainer), so fits running side by side in threads stay
    reproducible; None draws from torch's global generator."""

    def __init__(self, p: float) -> None:
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"{p=} must be in [0, 1)")
        self.p = p
        self.generator: torch.Generator | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        mask = torch.rand(x.shape, generator=self.generator)
        mask.add_(1.0 - self.p).floor_().mul_(1.0 / (1.0 - self.p))  # 1/(1-p) if u >= p, else 0
        return x * mask


class TabularMLP(nn.Module):
    """Embeddings ⊕ numericals -> [Linear -> BatchNorm -> ReLU -> Dropout] x n -> Linear.

    forward(codes: (B, n_categorical) int64, numeric: (B, d_numerical) float32)
    -> logits (B, n_classes). Softmax is applied by the caller (loss or predict).
    With ``d_aux`` > 0, :meth:`forward_with_aux` also returns (B, d_aux) regression outputs
    from the same last hidden layer (used only as an auxiliary training signal).
    ``ple`` = (n_embedded, n_bins, d_embedding) sends the first ``n_embedded`` numerical
    columns through a piecewise-linear embedding; ``head="ordinal"`` returns the
    log-probabilities of a cumulative-link head instead of free logits.
    """

    def __init__(
        self,
        *,
        cardinalities: Sequence[int],
        d_numerical: int,
        n_classes: int,
        d_hidden: Sequence[int] = (256, 128, 64),
        dropouts: Sequence[float] = (0.4, 0.3, 0.3),
        d_aux: int = 0,
        ple: tuple[int, int, int] | None = None,
        head: str = "softmax",
    ) -> None:
        super().__init__()
        if any(c < 1 for c in cardinalities):
            raise ValueError(f"{list(cardinalities)=} must all be positive")
        if d_numerical < 0:
            raise ValueError(f"{d_numerical=} must be non-negative")
        if not cardinalities and d_numerical == 0:
            raise ValueError("the model needs at least one categorical or numerical input")
        if n_classes < 2:
            raise ValueError(f"{n_classes=} must be at least 2")
        if not d_hidden or any(d < 1 for d in d_hidden):
            raise ValueError(f"{list(d_hidden)=} must be a non-empty list of positive widths")
        if len(dropouts) != len(d_hidden) or any(not 0 <= p < 1 for p in dropouts):
            raise ValueError(f"{list(dropouts)=} needs one rate in [0, 1) per hidden layer")
        if d_aux < 0:
            raise ValueError(f"{d_aux=} must be non-negative")
        if head not in HEADS:
            raise ValueError(f"{head=} unknown; choose from {HEADS}")
        if ple is not None and not 0 < ple[0] <= d_numerical:
            raise ValueError(f"{ple=}: embed between 1 and {d_numerical=} numerical columns")
        self.cardinalities = list(cardinalities)
        self.d_numerical = d_numerical
        self.n_classes = n_classes
        self.embeddings = nn.ModuleList(
            nn.Embedding(c, embedding_dim(c)) for c in self.cardinalities
        )
        d_in = sum(e.embedding_dim for e in self.embeddings) + d_numerical
        self.n_embedded = 0 if ple is None else ple[0]
        self.ple = None if ple is None else PiecewiseLinearEmbedding(*ple)
        if self.ple is not None:
            d_in += self.ple.d_out - self.n_embedded
        blocks: list[nn.Module] = []
        for width, p in zip(d_hidden, dropouts, strict=True):
            blocks += [nn.Linear(d_in, width), nn.BatchNorm1d(width), nn.ReLU(), Dropout(p)]
            d_in = width
        self.blocks = nn.Sequential(*blocks)
        self.head: nn.Module = (
            nn.Linear(d_in, n_classes) if head == "softmax" else CumulativeLinkHead(d_in, n_classes)
        )
        #: an ordinal head's latent is the value itself: no separate regression head
        self.tied_aux = bool(d_aux) and head == "ordinal"
        self.aux_head = nn.Linear(d_in, d_aux) if d_aux and not self.tied_aux else None

    def _hidden(self, codes: torch.Tensor, numeric: torch.Tensor) -> torch.Tensor:
        parts = [emb(codes[:, j]) for j, emb in enumerate(self.embeddings)]
        if self.ple is not None:
            parts.append(self.ple(numeric[:, : self.n_embedded]))
            numeric = numeric[:, self.n_embedded :]
        if numeric.shape[1]:
            parts.append(numeric)
        return self.blocks(torch.cat(parts, dim=1))

    def forward(self, codes: torch.Tensor, numeric: torch.Tensor) -> torch.Tensor:
        return self.head(self._hidden(codes, numeric))

    def forward_with_aux(
        self, codes: torch.Tensor, numeric: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        hidden = self._hidden(codes, numeric)
        if self.tied_aux:
            return self.head(hidden), torch.stack(self.head.latent(hidden), dim=1)
        aux = self.aux_head(hidden) if self.aux_head is not None else None
        return self.head(hidden), aux

    def aux_loss(self, aux: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Auxiliary loss of the rows with a known value: the latent's Gaussian likelihood
        for a tied ordinal head, else a smooth-L1 regression."""
        if self.tied_aux:
            return gaussian_nll(aux[:, 0], aux[:, 1], target)
        return nn.functional.smooth_l1_loss(aux[:, 0], target)
