"""Piecewise-linear encoding of numerical features (Gorishniy et al., NeurIPS 2022).

Each standardised numerical ``x`` becomes ``T`` components, one per quantile bin
``[b_{t-1}, b_t)``: 0 below the bin, 1 above it, the position inside it in between; a
per-feature linear map + ReLU then turns them into a small embedding. An MLP fed raw
values must build every threshold from ReLUs; this hands it the thresholds where the
data actually lie, which matters for step-like needs (core counts, round requests).
The bin edges are fitted on training rows and travel in the module's state (a buffer).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def quantile_edges(values: np.ndarray, n_bins: int) -> np.ndarray:
    """(m, n_bins + 1) edges per column from its finite values' quantiles (NaN ignored).

    Columns with fewer distinct values get repeated last edges (zero-width bins that act as
    a step at the maximum); an all-NaN column gets edges 0..1.
    """
    if n_bins < 1:
        raise ValueError(f"{n_bins=} must be positive")
    edges = np.zeros((values.shape[1], n_bins + 1), dtype=np.float32)
    for j in range(values.shape[1]):
        finite = values[:, j][np.isfinite(values[:, j])]
        if finite.size == 0:
            edges[j] = np.linspace(0.0, 1.0, n_bins + 1)
            continue
        unique = np.unique(np.quantile(finite, np.linspace(0, 1, n_bins + 1)))
        edges[j, : len(unique)] = unique
        edges[j, len(unique) :] = unique[-1]
    return edges


def piecewise_linear(x: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
    """(B, m) values, (m, T + 1) edges -> (B, m, T) components in [0, 1]."""
    left, width = edges[:, :-1], (edges[:, 1:] - edges[:, :-1]).clamp_min(1e-6)
    return ((x[:, :, None] - left) / width).clamp(0.0, 1.0)


class PiecewiseLinearEmbedding(nn.Module):
    """(B, m) numericals -> (B, m · d_embedding): piecewise-linear encoding, linear, ReLU."""

    def __init__(self, n_features: int, n_bins: int, d_embedding: int) -> None:
        super().__init__()
        if n_features < 1 or n_bins < 1 or d_embedding < 1:
            raise ValueError(f"{n_features=}, {n_bins=}, {d_embedding=} must be positive")
        self.register_buffer("edges", torch.zeros(n_features, n_bins + 1))
        self.edges[:] = torch.linspace(0.0, 1.0, n_bins + 1)
        bound = 1.0 / np.sqrt(n_bins)
        self.weight = nn.Parameter(
            torch.empty(n_features, n_bins, d_embedding).uniform_(-bound, bound)
        )
        self.bias = nn.Parameter(torch.empty(n_features, d_embedding).uniform_(-bound, bound))

    @property
    def d_out(self) -> int:
        return self.weight.shape[0] * self.weight.shape[2]

    def set_edges(self, edges: np.ndarray) -> None:
        """Use bin edges fitted on training rows (see :func:`quantile_edges`)."""
        if tuple(edges.shape) != tuple(self.edges.shape):
            raise ValueError(f"edges of shape {edges.shape}, expected {tuple(self.edges.shape)}")
        with torch.no_grad():
            self.edges.copy_(torch.as_tensor(edges, dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        encoded = piecewise_linear(x, self.edges)
        out = torch.einsum("bmt,mtd->bmd", encoded, self.weight) + self.bias
        return torch.relu(out).flatten(1)
