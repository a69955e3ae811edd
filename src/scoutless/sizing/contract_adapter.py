"""The in-memory online sizer seen through the shared contract's verbs, for the state store.

The contract (``first/retry/learn`` with an ``Outcome``, a per-type ``snapshot/restore``,
``keys``) is what `persistent.PersistentSizer` drives; this module is the one place that
maps it onto today's `engine.Engine` (``allocate/retry/observe/observe_kill`` and its
``TypeState``). Once the engine speaks the contract itself, this module goes and
`persistent` takes the engine directly.

Two things the engine leaves to call history are pinned here so that a sizer restored from
snapshots allocates exactly as the one it replaces: the cached pooled priors and the
sizing-in-progress are dropped on every restore (they are derived from the states), and the
types are kept in key order (the engine pools the other types' residuals in the order it
holds them; the order keys first arrived is not part of any state).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from scoutless.config import SizingSettings
from scoutless.sizing.engine import Engine, Features, TypeState

#: the fields of a type's state that are data (the others are caches rebuilt on demand)
STATE_FIELDS = (
    "xs", "ys", "log_request", "resid", "censored", "runtime", "shadow", "borrowed", "choice",
)  # fmt: skip


#: the state's lists of numbers (beside ``resid``'s, one per location model)
FLOAT_LISTS = ("xs", "ys", "log_request", "runtime")


def _finite_or_nan(key: str, name: str, values: list) -> list:
    """``values`` as a new list; ValueError when one is infinite (JSON cannot hold it)."""
    if np.isinf(np.asarray(values, dtype=float)).any():
        raise ValueError(f"{key!r}: the state's {name} holds an infinity")
    return list(values)


def _floats(values: Iterable[float | None]) -> list[float]:
    return [math.nan if v is None else float(v) for v in values]


@dataclass(frozen=True)
class Outcome:
    """What an attempt revealed: ``need`` measured, or a lower bound on it when ``censored``
    (the attempt was killed at that allocation); ``runtime`` seconds the attempt ran."""

    need: float
    runtime: float
    censored: bool = False


def features_to_dict(features: Features) -> dict[str, float]:
    """An instance's features as JSON-ready data (the outcome log keeps them)."""
    return asdict(features)


def features_from_dict(data: dict[str, Any]) -> Features:
    return Features(**{k: math.nan if v is None else float(v) for k, v in data.items()})


class ContractSizer:
    """`Engine` under the contract's verbs, with a per-type snapshot (see the module)."""

    def __init__(self, settings: SizingSettings | None = None) -> None:
        self.engine = Engine(settings)
        self._ordered = 0  # types held when they were last put in key order

    def first(self, key: str, features: Features) -> float:
        allocation = self.engine.allocate(key, features)
        self._keep_key_order()
        return allocation

    def retry(self, key: str, features: Features, failed: float) -> float:
        return self.engine.retry(key, features, failed)

    def learn(self, key: str, features: Features, outcome: Outcome) -> None:
        if outcome.censored:
            self.engine.observe_kill(key, features, outcome.need, outcome.runtime)
        else:
            self.engine.observe(key, features, outcome.need, outcome.runtime)
        self._keep_key_order()

    def keys(self) -> list[str]:
        """The types with a state worth keeping (an allocation alone leaves none)."""
        return [k for k, s in self.engine.types.items() if s.censored or s.ys]

    def snapshot(self, key: str) -> dict[str, Any]:
        """A type's state as JSON-ready data: equal states give equal JSON text. NaN stays
        NaN here (JSON text writes it as null); an infinity raises ValueError."""
        state = self.engine.types[key]
        out = {name: getattr(state, name) for name in STATE_FIELDS}
        # the models in the engine's order: a tie of shadow costs goes to the first one
        out["resid"] = {m: _finite_or_nan(key, m, v) for m, v in state.resid.items()}
        out["shadow"] = dict(state.shadow)
        _finite_or_nan(key, "shadow", list(out["shadow"].values()))
        for name in FLOAT_LISTS:
            out[name] = _finite_or_nan(key, name, out[name])
        out["censored"] = list(state.censored)
        return out

    def restore(self, key: str, snapshot: dict[str, Any]) -> None:
        """Put a type's state back from `snapshot`'s data (replacing what it held); a null
        where a number stands is NaN."""
        data = {name: snapshot[name] for name in STATE_FIELDS}
        data["resid"] = {m: _floats(v) for m, v in data["resid"].items()}
        data["shadow"] = dict(zip(data["shadow"], _floats(data["shadow"].values()), strict=True))
        for name in FLOAT_LISTS:
            data[name] = _floats(data[name])
        self.engine.types[key] = TypeState(**data)
        self._derived_changed()

    def forget(self, key: str) -> None:
        """Drop a type's state (one that holds nothing committed)."""
        self.engine.types.pop(key, None)
        self._derived_changed()

    def _derived_changed(self) -> None:
        """A state was replaced: recount, and drop what was derived from the states."""
        self.engine._observed = sum(len(s.censored) for s in self.engine.types.values())
        self.engine._priors.clear()
        self.engine._current = None
        self._keep_key_order()

    def _keep_key_order(self) -> None:
        """Sort the types by key when one was added (a known key keeps its place)."""
        types = self.engine.types
        if len(types) != self._ordered:
            self.engine.types = {k: types[k] for k in sorted(types)}
            self._ordered = len(types)
