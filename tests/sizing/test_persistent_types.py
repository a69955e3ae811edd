"""The persistent sizer's several types at once: one instance's outcomes of two resources
committed together or not at all, each resource sized by its own sizer (its price), and
types dropped from memory that a restart does not restore."""

from __future__ import annotations

from pathlib import Path

import pytest

from scoutless.config import Settings, SizingStateSettings
from scoutless.history.panda_db import make_engine
from scoutless.sizing.contract_adapter import ContractSizer, Features, Outcome
from scoutless.sizing.persistent import PersistentSizer
from scoutless.sizing.resources import walltime
from scoutless.sizing.state_store import SizingStateStore

WALL = ":walltime"


def _sizer(tmp_path: Path, **kw) -> PersistentSizer:  # type: ignore[no-untyped-def]
    settings = Settings()
    store = SizingStateStore(make_engine(f"sqlite:///{tmp_path / 's.sqlite'}"))
    store.create()
    priced = ContractSizer(settings.sizing, {WALL: walltime(settings).failure_price()})
    return PersistentSizer(store, priced, SizingStateSettings(), **kw)


def test_two_resources_commit_together_or_not_at_all(tmp_path: Path) -> None:
    sizer, f = _sizer(tmp_path), Features(cores=1)
    for i in range(6):
        sizer.learn(
            "t", f, Outcome(2000.0 + i, 3600.0), more=[("t" + WALL, f, Outcome(360.0, 1.0))]
        )
    assert sizer.versions == {"t": 6, "t" + WALL: 6}
    inner = sizer.sizer  # each resource's types in its own sizer, at its own price
    assert list(inner.sizer.types) == ["t"] and list(inner.resources[WALL].types) == ["t" + WALL]

    def fails(conn) -> None:  # type: ignore[no-untyped-def]
        raise RuntimeError("the caller's rows failed")

    with pytest.raises(RuntimeError):
        sizer.learn("t", f, Outcome(9000.0, 1.0), fails, more=[("t" + WALL, f, Outcome(1.0, 1.0))])
    restarted = _sizer(tmp_path)
    assert restarted.versions == {"t": 6, "t" + WALL: 6}  # neither committed
    assert restarted.sizer.keys() == ["t", "t" + WALL]
    with pytest.raises(ValueError, match="one outcome per type"):
        sizer.learn("t", f, Outcome(1.0, 1.0), more=[("t", f, Outcome(1.0, 1.0))])


def test_dropped_types_leave_memory_and_a_restart_skips_them(tmp_path: Path) -> None:
    sizer, f = _sizer(tmp_path), Features(cores=1)
    for key in ("a", "b"):
        sizer.learn(key, f, Outcome(1000.0, 60.0))
    sizer.drop(["a"])
    assert sizer.sizer.keys() == ["b"] and sizer.skipped == {"a": 1}
    assert sizer.refresh(force=True) == []  # the sums agree: nothing re-read
    with pytest.raises(ValueError, match="dropped"):
        sizer.learn("a", f, Outcome(1000.0, 60.0))
    restarted = _sizer(tmp_path, skip=lambda key: key == "a")
    assert restarted.sizer.keys() == ["b"] and restarted.skipped == {"a": 1}
    assert list(restarted.store.versions()) == ["a", "b"]  # the state stays in the store
