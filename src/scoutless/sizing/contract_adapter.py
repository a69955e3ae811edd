"""The in-memory online sizer as the state store drives it.

`persistent.PersistentSizer` drives ``first/retry/learn`` with an `Outcome`, a per-type
``snapshot/restore``, ``keys`` and ``forget``; `online.OnlineSizer` speaks all of them but
``forget``. One thing the sizer leaves to call history is pinned here so that a sizer
restored from snapshots allocates exactly as the one it replaces: the types are kept in
key order (the sizer pools the other types' residuals in the order it holds them, and the
order keys first arrived in one process is not part of any state).

Memory and walltime are two resources of the same engine: a key that ends with one of
``priced``'s suffixes (``":walltime"``) is sized by a sizer of its own with that resource's
price of a failed attempt (`resources.Resource.failure_price`), so one persistent state and
one set of verbs serve both, and a type's pooled prior never mixes megabytes with seconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any

from scoutless.config import SizingSettings
from scoutless.sizing.distribution import FailurePrice
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
    """`OnlineSizer` with its types in key order and a ``forget``, one sizer per resource
    (see the module)."""

    def __init__(
        self,
        settings: SizingSettings,
        priced: Mapping[str, Callable[[Features], FailurePrice] | None] | None = None,
        price: Callable[[Features], FailurePrice] | None = None,
    ) -> None:
        """``priced``: key suffix → the failure price of that resource's sizer; ``price``:
        the failure price of every other key's (None: the sizing settings' penalty)."""
        self.sizer = OnlineSizer(settings, failure_price=price)
        self.resources = {
            suffix: OnlineSizer(settings, failure_price=cost)
            for suffix, cost in (priced or {}).items()
        }
        self._ordered: dict[int, int] = {}  # id(sizer) → its types when last put in key order

    def _of(self, key: str) -> OnlineSizer:
        """The sizer of ``key``'s resource."""
        for suffix, sizer in self.resources.items():
            if key.endswith(suffix):
                return sizer
        return self.sizer

    def first(self, key: str, features: Features) -> float:
        sizer = self._of(key)
        allocation = sizer.first(key, features)
        self._keep_key_order(sizer)
        return allocation

    def retry(self, key: str, features: Features, failed: float) -> float:
        return self._of(key).retry(key, features, failed)

    def learn(self, key: str, features: Features, outcome: Outcome) -> None:
        sizer = self._of(key)
        sizer.learn(key, features, outcome)
        self._keep_key_order(sizer)

    def keys(self) -> list[str]:
        """The types with a state worth keeping (an allocation alone leaves none)."""
        return sorted(
            k
            for sizer in (self.sizer, *self.resources.values())
            for k, s in sizer.types.items()
            if s.learnt or len(s.rows)
        )

    def snapshot(self, key: str) -> dict[str, Any]:
        """A type's state as JSON-ready data: equal states give equal data."""
        return self._of(key).snapshot(key)

    def restore(self, key: str, snapshot: dict[str, Any]) -> None:
        """Put a type's state back from `snapshot`'s data (replacing what it held)."""
        sizer = self._of(key)
        sizer.restore(key, snapshot)
        self._keep_key_order(sizer)

    def forget(self, key: str) -> None:
        """Drop a type's state (one that holds nothing committed)."""
        sizer = self._of(key)
        sizer.forget(key)
        self._ordered[id(sizer)] = len(sizer.types)  # a sorted dict less one key stays sorted

    def _keep_key_order(self, sizer: OnlineSizer) -> None:
        """Sort the types by key when one was added (a known key keeps its place)."""
        types = sizer.types
        if len(types) != self._ordered.get(id(sizer), 0):
            sizer.types = {k: types[k] for k in sorted(types)}
            self._ordered[id(sizer)] = len(types)
