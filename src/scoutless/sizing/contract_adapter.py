"""The in-memory online sizer as the state store drives it.

`persistent.PersistentSizer` drives ``first/retry/learn`` with an `Outcome`, a per-type
``snapshot/restore``, ``keys`` and ``forget``; `online.OnlineSizer` speaks all of them but
``forget``. One thing the sizer leaves to call history is pinned here so that a sizer
restored from snapshots allocates exactly as the one it replaces: the types are kept in
key order (the sizer pools the other types' residuals in the order it holds them, and the
order keys first arrived in one process is not part of any state).
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from scoutless.config import SizingSettings
from scoutless.sizing.features import Release as Features
from scoutless.sizing.online import OnlineSizer
from scoutless.sizing.protocol import Outcome

__all__ = ["ContractSizer", "Features", "Outcome", "features_from_dict", "features_to_dict"]


def features_to_dict(features: Features) -> dict[str, float]:
    """An instance's features as JSON-ready data (the outcome log keeps them)."""
    return asdict(features)


def features_from_dict(data: dict[str, Any]) -> Features:
    return Features(**{k: math.nan if v is None else float(v) for k, v in data.items()})


class ContractSizer:
    """`OnlineSizer` with its types in key order and a ``forget`` (see the module)."""

    def __init__(self, settings: SizingSettings) -> None:
        self.sizer = OnlineSizer(settings)
        self._ordered = 0  # types held when they were last put in key order

    def first(self, key: str, features: Features) -> float:
        allocation = self.sizer.first(key, features)
        self._keep_key_order()
        return allocation

    def retry(self, key: str, features: Features, failed: float) -> float:
        return self.sizer.retry(key, features, failed)

    def learn(self, key: str, features: Features, outcome: Outcome) -> None:
        self.sizer.learn(key, features, outcome)
        self._keep_key_order()

    def keys(self) -> list[str]:
        """The types with a state worth keeping (an allocation alone leaves none)."""
        return [k for k, s in self.sizer.types.items() if s.learnt or len(s.rows)]

    def snapshot(self, key: str) -> dict[str, Any]:
        """A type's state as JSON-ready data: equal states give equal data."""
        return self.sizer.snapshot(key)

    def restore(self, key: str, snapshot: dict[str, Any]) -> None:
        """Put a type's state back from `snapshot`'s data (replacing what it held)."""
        self.sizer.restore(key, snapshot)
        self._keep_key_order()

    def forget(self, key: str) -> None:
        """Drop a type's state (one that holds nothing committed)."""
        self.sizer.forget(key)
        self._ordered = len(self.sizer.types)  # a sorted dict less one key stays sorted

    def _keep_key_order(self) -> None:
        """Sort the types by key when one was added (a known key keeps its place)."""
        types = self.sizer.types
        if len(types) != self._ordered:
            self.sizer.types = {k: types[k] for k in sorted(types)}
            self._ordered = len(types)
