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
- A process that starts (or restarts after a kill) reads every type's committed state,
  but those its ``skip`` names (a finished PanDA task's): `drop` forgets types in memory
  and stops restoring them, their committed state kept in the store.
- ``learn``'s ``more``: other types' outcomes of the same instance (a job's memory and its
  run) committed in the one transaction: all of them or none.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Sequence
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
        skip: Callable[[str], bool] | None = None,
    ) -> None:
        self.store = store
        self.skip = skip
        #: the committed version of each type not held (`drop`, ``skip``)
        self.skipped: dict[str, int] = {}
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
        if self.store.committed() == sum(self.versions.values()) + sum(self.skipped.values()):
            return []
        held = self.skipped | self.versions
        moved = {k: v for k, v in self.store.versions().items() if held.get(k) != v}
        skipped = [k for k in moved if k in self.skipped or (self.skip and self.skip(k))]
        self.drop(skipped)
        self.skipped.update((k, moved.pop(k)) for k in skipped)
        for key, (version, snapshot) in self.store.read(moved).items():
            self.sizer.restore(key, snapshot)
            self.versions[key] = version
        return list(moved)

    def drop(self, keys: Iterable[str]) -> None:
        """Forget these types in memory and restore them no more (their committed state
        stays in the store): a finished task's."""
        for key in keys:
            version = self.versions.pop(key, None)
            self.sizer.forget(key)
            if version is not None:
                self.skipped[key] = version

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
        *,
        more: Sequence[tuple[str, Features, Outcome]] = (),
    ) -> int:
        """Learn an outcome and commit it; the type's version it made. Raises ValueError for
        an outcome that is no measurement (or a type dropped), RuntimeError when
        ``max_attempts`` compare-and-sets in a row were lost to other writers. ``also``: the
        caller's rows, written in the outcome's transaction once the sizer holds it
        (``self.sizer`` sizes on the new state there); what it raises rolls back and is
        raised. ``more``: other types' outcomes committed with it, all or none."""
        learns = [(_checked_key(k), f, o) for k, f, o in [(key, features, outcome), *more]]
        keys = [k for k, _, _ in learns]
        for k, _, o in learns:
            _check_outcome(k, o)
            if k in self.skipped:
                raise ValueError(f"sizing state of {k!r} was dropped: nothing more is learnt")
        if len(set(keys)) != len(keys):
            raise ValueError(f"one outcome per type in a transaction: {keys}")
        for _ in range(self.settings.max_attempts):
            self.refresh(force=True)
            held = {k: self.versions.get(k, 0) for k in keys}
            try:
                for k, f, o in learns:
                    self.sizer.learn(k, f, o)
                committed = self.store.append(
                    keys[0], held[keys[0]], features_to_dict(features), asdict(outcome),
                    self.sizer.snapshot(keys[0]),
                    functools.partial(self._write_more, rest=learns[1:], held=held, also=also),
                )  # fmt: skip
            except BaseException:  # nothing committed: drop what was applied in memory
                for k in keys:
                    self._discard(k, held[k])
                raise
            if committed:
                self.versions.update((k, v + 1) for k, v in held.items())
                return held[keys[0]] + 1
            self.conflicts += 1
            for k in keys:
                self._discard(k, held[k])
        raise RuntimeError(
            f"sizing state of {key!r}: {self.settings.max_attempts} compare-and-sets in a row "
            "lost to other writers (settings.sizing_state.max_attempts)"
        )

    def _write_more(self, conn: Connection, *, rest: Sequence[tuple[str, Features, Outcome]],
                    held: dict[str, int], also: Callable[[Connection], None] | None) -> None:  # fmt: skip
        """The other types' rows, then the caller's, on the first outcome's transaction."""
        for k, f, o in rest:
            self.store.write(conn, k, held[k], features_to_dict(f), asdict(o),
                             self.sizer.snapshot(k))  # fmt: skip
        if also is not None:
            also(conn)

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
