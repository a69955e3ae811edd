"""The contract of a loaded bundle, typed once for everyone who uses one.

:class:`scoutless.bundle.Predictor` implements it; evaluation, retraining and monitoring
type against this protocol so their tests can hand in small fakes that offer only the
members they use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import pandas as pd

from scoutless.allocation.room_loads import RoomLoads
from scoutless.allocation.spread_table import SpreadTable
from scoutless.allocation.values import ConformalLevels, ValueDistribution
from scoutless.features.encoded import EncodedFeatures, InspectedFeatures
from scoutless.features.spec import FeatureSpec
from scoutless.targets.bins import TargetBins


class PredictorLike(Protocol):
    """Class probabilities per target from a versioned bundle."""

    version: str
    manifest: dict[str, Any]
    targets: list[str]
    bins: Mapping[str, TargetBins]
    feature_specs: Sequence[FeatureSpec]
    #: the jobs' spread per task kind a decision prices (None: every job at its task's value)
    job_spreads: SpreadTable | None
    #: the room loads a decision prices HIMEM and the long queue at (None: load 0)
    room_loads: RoomLoads | None

    def models(self, target: str) -> list[str]: ...

    def champion(self, target: str) -> str: ...

    def predict_proba(
        self, data: Any, targets: list[str] | None = None, model: str | None = None
    ) -> dict[str, np.ndarray]: ...

    def inspect(self, data: Any) -> InspectedFeatures: ...

    def predict_encoded(
        self, encoded: EncodedFeatures, target: str, model: str | None = None
    ) -> np.ndarray: ...

    def calibration(
        self, target: str, model: str | None = None
    ) -> tuple[np.ndarray, np.ndarray]: ...

    def reference(self) -> pd.DataFrame: ...

    def has_values(self, target: str) -> bool: ...

    def value_distribution(self, data: Any, target: str) -> ValueDistribution: ...

    def value_distributions(
        self, encoded: EncodedFeatures, targets: Sequence[str]
    ) -> dict[str, ValueDistribution]: ...

    def value_levels(self, target: str) -> ConformalLevels: ...
