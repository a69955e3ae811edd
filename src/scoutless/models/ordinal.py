"""An ordinal head: a location-scale cumulative-link model over the ordered classes.

The classes are resource levels cut from one continuous need, so the head models that
need as a latent score: P(y <= k | x) = sigmoid((c_k - mu(x)) / s(x)) with increasing
cut points c_k shared by all tasks and a per-task location mu and scale s. Its
probabilities are ordered by construction (a larger mu moves mass to larger classes,
and every cumulative probability is monotone in k), and a mistake is likelier by one
class than by three. The head returns log-probabilities, which act as logits everywhere
(softmax of log p is p), so the loss, temperature and policies need no change.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

#: log-scale bounds keep the logistic slopes finite while training
LOG_SCALE_BOUNDS = (-4.0, 4.0)
_EPS = 1e-7


class CumulativeLinkHead(nn.Module):
    """(B, d_in) hidden -> (B, n_classes) log-probabilities of ordered classes."""

    def __init__(self, d_in: int, n_classes: int) -> None:
        super().__init__()
        if n_classes < 2:
            raise ValueError(f"{n_classes=} must be at least 2")
        self.n_classes = n_classes
        self.location = nn.Linear(d_in, 1)
        self.log_scale = nn.Linear(d_in, 1)
        nn.init.zeros_(self.log_scale.weight)
        nn.init.zeros_(self.log_scale.bias)
        self.first_cut = nn.Parameter(torch.tensor(-(n_classes - 2) / 2.0))
        self.log_gaps = nn.Parameter(torch.zeros(n_classes - 2))

    def init_cuts(self, y: np.ndarray) -> None:
        """Cut points at the logits of the classes' cumulative frequencies in ``y``."""
        counts = np.bincount(np.asarray(y, dtype=np.int64), minlength=self.n_classes) + 1.0
        cumulative = np.cumsum(counts)[:-1] / counts.sum()
        cuts = np.log(cumulative / (1 - cumulative))
        gaps = np.maximum(np.diff(cuts), 1e-3)
        with torch.no_grad():
            self.first_cut.fill_(float(cuts[0]))
            self.log_gaps.copy_(torch.as_tensor(np.log(gaps), dtype=torch.float32))

    def cuts(self) -> torch.Tensor:
        """(n_classes - 1,) strictly increasing cut points."""
        rest = self.first_cut + torch.cumsum(torch.exp(self.log_gaps), dim=0)
        return torch.cat([self.first_cut.reshape(1), rest])

    def cumulative(self, hidden: torch.Tensor) -> torch.Tensor:
        """(B, n_classes - 1) P(y <= k) for k = 0 .. n_classes - 2."""
        scale = torch.exp(self.log_scale(hidden).clamp(*LOG_SCALE_BOUNDS))
        return torch.sigmoid((self.cuts()[None, :] - self.location(hidden)) / scale)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        cdf = self.cumulative(hidden)
        ones = torch.ones_like(cdf[:, :1])
        proba = torch.diff(cdf, dim=1, prepend=torch.zeros_like(ones), append=ones)
        return torch.log(proba.clamp_min(_EPS))


def cumulative_link_log_proba(
    location: np.ndarray, log_scale: np.ndarray, cuts: np.ndarray
) -> np.ndarray:
    """The head's forward pass in numpy: (n,) location and log-scale, (K - 1,) cuts."""
    scale = np.exp(np.clip(log_scale, *LOG_SCALE_BOUNDS))
    z = (cuts[None, :] - location[:, None]) / scale[:, None]
    cdf = 1.0 / (1.0 + np.exp(-z))
    n = len(location)
    proba = np.diff(np.hstack([np.zeros((n, 1)), cdf, np.ones((n, 1))]), axis=1)
    return np.log(np.maximum(proba, _EPS))
