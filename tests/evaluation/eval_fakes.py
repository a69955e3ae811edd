"""Small synthetic training tables and a fake Predictor with the bundle's API (shared by tests)."""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from scoutless.features.spec import FeatureSpec
from scoutless.history.table import TrainingTable
from scoutless.targets.bins import TargetBins, load_bins
from scoutless.targets.spec import (
    TARGET_NAMES,
    bayes_class_col,
    bayes_confidence_col,
    class_col,
    scout_class_col,
    value_col,
)

FEATURES = [
    FeatureSpec("processingtype", "categorical"),
    FeatureSpec("transpath", "categorical"),
    FeatureSpec("corecount", "numerical"),
]
PROCESSING = {
    "evgen": "Gen_tf.py",
    "simul": "Sim_tf.py",
    "reco": "Reco_tf.py",
    "deriv": "Derivation_tf.py",
}


def _value_in_class(bins: TargetBins, classes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A value inside each class's interval (open last class: up to twice its lower edge)."""
    lo = np.asarray(bins.edges[:-1], dtype=float)[classes]
    hi = np.asarray(bins.edges[1:], dtype=float)[classes]
    hi = np.where(np.isfinite(hi), hi, np.maximum(lo, 1.0) * 2)
    return lo + (hi - lo) * rng.uniform(0.05, 0.95, len(classes))


def make_table(
    n: int = 600,
    seed: int = 0,
    *,
    scouts: bool = True,
    bayes: bool = True,
    targets: tuple[str, ...] = TARGET_NAMES,
) -> TrainingTable:
    """Tasks whose classes follow their processing type (with noise), as in PanDA history."""
    rng = np.random.default_rng(seed)
    bins = load_bins(targets=list(targets))
    ptype = rng.choice(list(PROCESSING), n)
    frame = pd.DataFrame(
        {
            "jeditaskid": np.arange(1, n + 1),
            "processingtype": ptype,
            "transpath": [PROCESSING[p] for p in ptype],
            "corecount": rng.choice([1.0, 8.0], n),
            "scout_wait_hours": rng.gamma(2.0, 1.5, n),
        }
    )
    type_index = pd.Series(ptype).map({p: i for i, p in enumerate(PROCESSING)}).to_numpy()
    for t, b in bins.items():
        k = b.n_classes
        base = type_index % k
        noisy = rng.random(n) < 0.25
        y = np.where(noisy, rng.integers(0, k, n), base)
        frame[value_col(t)] = _value_in_class(b, y, rng)
        frame[class_col(t)] = b.classify(frame[value_col(t)].to_numpy())
        if scouts:
            wrong = rng.random(n) < 0.3
            scout = np.where(wrong, np.clip(y + rng.choice([-1, 1], n), 0, k - 1), y)
            scout[rng.random(n) < 0.05] = -1  # a few tasks without scouts
            frame[scout_class_col(t)] = scout
        if bayes:
            frame[bayes_class_col(t)] = base
            frame[bayes_confidence_col(t)] = 0.75 + 0.25 / k
    frame["split_random"] = np.where(rng.random(n) < 0.3, "test", "train")
    frame["split_time"] = np.where(np.arange(n) >= int(0.7 * n), "test", "train")
    return TrainingTable(frame, list(FEATURES), bins, source="synthetic-test")


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


class FakePredictor:
    """Knows the table's true classes (by row index) and adds model-specific noise.

    ``xgb`` is sharper than ``dnn``; both are overconfident, so calibration has something
    to show. ``calibration`` draws a fresh set from the same noise model.
    """

    def __init__(self, table: TrainingTable, models: tuple[str, ...] = ("xgb", "dnn")) -> None:
        self.version = "fake-0"
        self.manifest = {"version": self.version}
        self.targets = list(table.targets)
        self.bins = dict(table.bins)
        self.feature_specs = list(table.features)
        self.job_spreads = None
        self.room_loads = None
        self._table = table
        self._models = models
        self.calls: list[tuple[str, str | None]] = []

    def models(self, target: str) -> list[str]:
        return list(self._models)

    def champion(self, target: str) -> str:
        return self._models[0]

    def _proba(self, y: np.ndarray, k: int, model: str, seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        strength = 3.0 if model == self._models[0] else 1.5
        logits = rng.normal(0.0, 1.2, (len(y), k))
        logits[np.arange(len(y)), np.clip(y, 0, k - 1)] += strength
        return _softmax(logits)

    def predict_proba(self, data: pd.DataFrame, targets=None, model=None) -> dict[str, np.ndarray]:
        out = {}
        for t in targets or self.targets:
            self.calls.append((t, model))
            y = self._table.frame.loc[data.index, class_col(t)].to_numpy()
            seed = zlib.crc32(f"{t}/{model or self._models[0]}".encode())
            out[t] = self._proba(y, self.bins[t].n_classes, model or self._models[0], seed)
        return out

    def has_values(self, target: str) -> bool:
        return False

    def calibration(self, target: str, model: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(7)
        k = self.bins[target].n_classes
        y = rng.integers(0, k, 400)
        return self._proba(y, k, model or self._models[0], 11), y
