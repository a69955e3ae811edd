"""What the DNN is fed: encoded features and target values turned into float32 tensors.

Missing numericals become 0 plus a missing flag per column; the auxiliary regression
target is the standardised sign·log1p of the target value (NaN: no auxiliary loss).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scoutless.features.encoded import EncodedFeatures
from scoutless.features.encoders import signed_log1p

if TYPE_CHECKING:
    import torch


def numeric_input(numeric: np.ndarray) -> np.ndarray:
    """(n, m) standardised numericals with NaN -> (n, 2m): values (NaN -> 0) ⊕ missing flags."""
    missing = np.isnan(numeric)
    return np.hstack([np.where(missing, 0.0, numeric), missing]).astype(np.float32)


def aux_target(values: np.ndarray) -> np.ndarray:
    """Standardised sign·log1p of the target values (NaN stays NaN: no auxiliary loss there)."""
    logged = signed_log1p(np.asarray(values, dtype=float))
    finite = logged[np.isfinite(logged)]
    if finite.size < 2:
        return np.full(len(logged), np.nan, dtype=np.float32)
    return ((logged - finite.mean()) / max(finite.std(), 1e-9)).astype(np.float32)


def feature_tensors(X: EncodedFeatures) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes int64, numeric float32 with missing flags) ready for :class:`TabularMLP`."""
    import torch  # here, not above: serving a few rows goes through numpy only

    codes = torch.from_numpy(np.ascontiguousarray(X.codes))
    return codes, torch.from_numpy(numeric_input(X.numeric))
