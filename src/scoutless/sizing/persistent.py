"""The online sizer with its state in the database, shared by every process that opens it.

`PersistentSizer` speaks the sizer's verbs (``first``, ``retry``, ``learn``) around an
in-memory sizer and a `state_store.SizingStateStore`:

- ``learn`` re-reads the types whose version moved, applies the outcome in memory, and
  commits it with the type's new state at version + 1 (compare-and-set). A lost race
  re-reads the newer states and applies the outcome again on them; it returns only once
  its row committed, so an outcome acknowledged is never lost to a crash or a writer.
- ``first`` and ``retry`` re-read the types whose version moved (at most every
  ``refresh_interval_s``): every type, because a type's allocation borrows from the
  others' residuals. One scalar query (the sum of the versions: it grows with every commit);
  when it moved, the (key, version) pairs, then the moved states only.
- A process that starts (or restarts after a kill) reads every type's committed state.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict

from sqlalchemy import Connection

from scoutless.config import SizingSettings, SizingStateSettings
from scoutless.history.panda_db import make_engine
from scoutless.sizing.contract_adapter import ContractSizer, Features, Outcome, features_to_dict
from scoutless.sizing.state_store import KEY_LENGTH, SizingStateStore


class PersistentSizer:
    """first/retry/learn with the state kept in the database (see the module's docstring)."""

    def __init__(
        self,
        store: SizingStateStore,
        sizer: ContractSizer,
        settings: SizingStateSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.sizer = sizer
        self.settings = settings
        self.clock = clock
        self.versions: dict[str, int] = {}  # the version of each type this process holds
        self.conflicts = 0  # compare-and-set attempts lost (each one re-read the moved types)
        self._checked = -math.inf
        self.refresh(force=True)

    @classmethod
    def open(
        cls,
        url: str,
        *,
        sizing: SizingSettings,
        settings: SizingStateSettings,
    ) -> PersistentSizer:
        """The sizer on ``url`` (the caller's: ``sizing_state.db_url``, else the project's
        database), its tables created when missing, every committed state read."""
        engine = make_engine(url)
        store = SizingStateStore(engine, keep_outcomes=settings.keep_outcomes)
        store.create()
        return cls(store, ContractSizer(sizing), settings)

    def refresh(self, *, force: bool = False) -> list[str]:
        """Restore the types whose committed version differs from the one held; the keys
        restored. Without ``force``, at most once every ``refresh_interval_s``."""
        now = self.clock()
        if not force and now - self._checked < self.settings.refresh_interval_s:
            return []
        self._checked = now
        # versions only grow and none held is above the database's: equal sums, all equal
        if self.store.committed() == sum(self.versions.values()):
            return []
        moved = [k for k, v in self.store.versions().items() if self.versions.get(k) != v]
        for key, (version, snapshot) in self.store.read(moved).items():
            self.sizer.restore(key, snapshot)
            self.versions[key] = version
        return moved

    def first(self, key: str, features: Features) -> float:
        """The first attempt's allocation, on the latest committed states."""
        self.refresh()
        return self.sizer.first(_checked_key(key), features)

    def retry(self, key: str, features: Features, failed: float) -> float:
        """The next attempt after one failed at ``failed``, on the latest committed states."""
        self.refresh()
        return self.sizer.retry(_checked_key(key), features, failed)

    def learn(
        self,
        key: str,
        features: Features,
        outcome: Outcome,
        also: Callable[[Connection], None] | None = None,
    ) -> int:
        """Learn an outcome and commit it; the type's version it made. Raises ValueError for
        an outcome that is no measurement, RuntimeError when ``max_attempts``
        compare-and-sets in a row were lost to other writers. ``also``: the caller's rows,
        written in the outcome's transaction once the sizer holds it (``self.sizer`` sizes
        on the new state there); what it raises rolls back and is raised."""
        key = _checked_key(key)
        _check_outcome(key, outcome)
        for _ in range(self.settings.max_attempts):
            self.refresh(force=True)
            version = self.versions.get(key, 0)
            try:
                self.sizer.learn(key, features, outcome)
                committed = self.store.append(
                    key, version, features_to_dict(features), asdict(outcome),
                    self.sizer.snapshot(key), also,
                )  # fmt: skip
            except BaseException:  # nothing committed: drop what was applied in memory
                self._discard(key, version)
                raise
            if committed:
                self.versions[key] = version + 1
                return version + 1
            self.conflicts += 1
            self._discard(key, version)
        raise RuntimeError(
            f"sizing state of {key!r}: {self.settings.max_attempts} compare-and-sets in a row "
            "lost to other writers (settings.sizing_state.max_attempts)"
        )

    def _discard(self, key: str, version: int) -> None:
        """The type holds an outcome that did not commit: forget it (a new type) or have
        the next refresh restore the committed state over it."""
        if version == 0:
            self.sizer.forget(key)
            self.versions.pop(key, None)
        else:
            self.versions[key] = -1


def _check_outcome(key: str, outcome: Outcome) -> None:
    if not (math.isfinite(outcome.need) and outcome.need > 0):
        raise ValueError(f"{key!r}: an outcome's need must be a positive number: {outcome.need!r}")
    if not (math.isfinite(outcome.runtime) and outcome.runtime >= 0):
        raise ValueError(f"{key!r}: an outcome's runtime must be >= 0 s: {outcome.runtime!r}")


def _checked_key(key: str) -> str:
    if not isinstance(key, str) or not 0 < len(key) <= KEY_LENGTH:
        raise ValueError(f"a task type's key must be text of 1 to {KEY_LENGTH} characters: {key!r}")
    return key
