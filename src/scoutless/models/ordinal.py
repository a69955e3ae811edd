"""An ordinal head: a location-scale cumulative-probit model over the ordered classes.

The classes are resource levels cut from one continuous need, so the head models that
need as a latent score: P(y <= k | x) = Phi((c_k - mu(x)) / s(x)) with increasing cut
points c_k shared by all tasks and a per-task location mu and scale s. Its probabilities
are ordered by construction (a larger mu moves mass to larger classes, every cumulative
probability is monotone in k), and a mistake is likelier by one class than by three.

When the rows' continuous values are known, the latent can be the standardised log value
itself: the cut points are then the class boundaries on that scale (read off the data,
then fixed) and training adds the value's Gaussian likelihood under (mu, s), a far richer
signal than the class alone. The head returns log-probabilities, which act as logits
everywhere (softmax of log p is p), so the loss, temperature and policies need no change.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

# the constants are shared with the numpy forward pass (ordinal_inference.py, torch-free)
from scoutless.models.ordinal_inference import EPS as _EPS
from scoutless.models.ordinal_inference import LOG_SCALE_BOUNDS
from scoutless.models.ordinal_inference import SQRT1_2 as _SQRT1_2

_MIN_GAP = 1e-3


def normal_cdf(z: torch.Tensor) -> torch.Tensor:
    """Phi(z) through ``erfc``: torch's float32 ``ndtr`` is off by up to 15 % in the lower
    tail (probabilities 1e-7 .. 1e-4), this is within 3e-6 of scipy's."""
    return 0.5 * torch.special.erfc(z * -_SQRT1_2)


def boundaries(latent: np.ndarray, y: np.ndarray, n_classes: int) -> np.ndarray:
    """(n_classes - 1,) increasing cut points between consecutive classes on ``latent``.

    Each is the midpoint between the largest latent of classes <= k and the smallest of
    classes > k (NaN latents ignored); empty sides borrow their neighbour's cut plus a gap.
    """
    latent, y = np.asarray(latent, dtype=float), np.asarray(y)
    known = np.isfinite(latent)
    latent, y = latent[known], y[known]
    cuts = np.full(n_classes - 1, np.nan)
    for k in range(n_classes - 1):
        below, above = latent[y <= k], latent[y > k]
        if below.size and above.size:
            cuts[k] = (below.max() + above.min()) / 2
    if np.isnan(cuts).all():
        return np.arange(n_classes - 1, dtype=float) - (n_classes - 2) / 2
    known_cuts = ~np.isnan(cuts)
    filled = np.interp(np.arange(n_classes - 1), np.flatnonzero(known_cuts), cuts[known_cuts])
    for k in range(1, len(filled)):
        filled[k] = max(filled[k], filled[k - 1] + _MIN_GAP)
    return filled


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

    def set_cuts(self, cuts: np.ndarray, *, trainable: bool) -> None:
        """Start from (or, ``trainable=False``, keep) the increasing cut points ``cuts``."""
        gaps = np.maximum(np.diff(cuts), _MIN_GAP)
        with torch.no_grad():
            self.first_cut.fill_(float(cuts[0]))
            self.log_gaps.copy_(torch.as_tensor(np.log(gaps), dtype=torch.float32))
        self.first_cut.requires_grad_(trainable)
        self.log_gaps.requires_grad_(trainable)

    def init_cuts(self, y: np.ndarray) -> None:
        """Trainable cut points starting at the probits of the classes' cumulative frequencies."""
        from scipy.special import ndtri

        counts = np.bincount(np.asarray(y, dtype=np.int64), minlength=self.n_classes) + 1.0
        self.set_cuts(ndtri(np.cumsum(counts)[:-1] / counts.sum()), trainable=True)

    def cuts(self) -> torch.Tensor:
        """(n_classes - 1,) strictly increasing cut points."""
        rest = self.first_cut + torch.cumsum(torch.exp(self.log_gaps), dim=0)
        return torch.cat([self.first_cut.reshape(1), rest])

    def latent(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B,) location and (B,) bounded log-scale of the latent score."""
        log_scale = self.log_scale(hidden)[:, 0].clamp(*LOG_SCALE_BOUNDS)
        return self.location(hidden)[:, 0], log_scale

    def _standardised_cuts(self, hidden: torch.Tensor) -> torch.Tensor:
        """(B, n_classes - 1) the cuts in units of each row's latent: (cut - location) / scale."""
        location, log_scale = self.latent(hidden)
        return (self.cuts()[None, :] - location[:, None]) * torch.exp(-log_scale)[:, None]

    def cumulative(self, hidden: torch.Tensor) -> torch.Tensor:
        """(B, n_classes - 1) P(y <= k) for k = 0 .. n_classes - 2."""
        return normal_cdf(self._standardised_cuts(hidden))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        z = self._standardised_cuts(hidden)
        inf = torch.full_like(z[:, :1], torch.inf)
        lower, upper = torch.cat([-inf, z], dim=1), torch.cat([z, inf], dim=1)
        # above the median, a difference of upper tails: 1 - cdf would cancel in float32
        proba = torch.where(
            lower > 0,
            normal_cdf(-lower) - normal_cdf(-upper),
            normal_cdf(upper) - normal_cdf(lower),
        )
        return torch.log(proba.clamp_min(_EPS))


def gaussian_nll(
    location: torch.Tensor, log_scale: torch.Tensor, value: torch.Tensor
) -> torch.Tensor:
    """Mean Gaussian negative log-likelihood of ``value`` (constant dropped)."""
    return (0.5 * ((value - location) * torch.exp(-log_scale)) ** 2 + log_scale).mean()
