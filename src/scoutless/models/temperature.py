"""Temperature scaling: one scalar T fitted on validation logits so softmax(z / T) is calibrated.

Dividing by T never changes the argmax, so accuracy is untouched; only the confidence
(which the risk and safe policies rely on) moves toward the observed frequencies.
"""

from __future__ import annotations

import numpy as np


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax, stable for large logits."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def nll(logits: np.ndarray, y: np.ndarray, temperature: float) -> float:
    """Mean negative log-likelihood of the true classes at temperature T."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    z = z - z.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(z).sum(axis=1))
    return float((log_norm - z[np.arange(len(y)), y]).mean())


def fit_temperature(
    logits: np.ndarray, y: np.ndarray, bounds: tuple[float, float] = (0.05, 20.0)
) -> float:
    """T minimising validation NLL (searched on log T); 1.0 when there is nothing to fit."""
    from scipy.optimize import minimize_scalar  # fitting only: serving needs softmax alone

    y = np.asarray(y, dtype=np.int64)
    if len(y) == 0:
        return 1.0
    lo, hi = np.log(bounds[0]), np.log(bounds[1])
    result = minimize_scalar(
        lambda log_t: nll(logits, y, float(np.exp(log_t))),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-4},
    )
    return float(np.exp(result.x))
