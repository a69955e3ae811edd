"""The online sizer's state in the database: it round-trips, a process killed between two
outcomes restarts with every one it acknowledged and allocates as an uninterrupted run,
two processes learning the same types lose no update, and a stale writer re-reads.

SQLite always; PostgreSQL too where ``SCOUTLESS_TEST_PG_URL`` names a test database."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmark_modules import benchmark_module
from scoutless.config import SizingSettings, SizingStateSettings
from scoutless.history.panda_db import make_engine
from scoutless.sizing.contract_adapter import ContractSizer, Features, Outcome, features_from_dict
from scoutless.sizing.persistent import PersistentSizer
from scoutless.sizing.state_store import SizingStateStore, dumps, state_metadata

PG_URL = os.environ.get("SCOUTLESS_TEST_PG_URL")
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.skipif(
    not PG_URL, reason="SCOUTLESS_TEST_PG_URL not set"))]  # fmt: skip


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: a SQLite file, or the PostgreSQL test database's tables dropped."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'state.sqlite'}"
        return
    engine = make_engine(PG_URL)
    state_metadata.drop_all(engine)
    yield PG_URL
    state_metadata.drop_all(engine)
    engine.dispose()


@pytest.fixture(scope="module")
def driver():
    with benchmark_module("sizing_stream") as module:
        yield module


def state_text(sizer: PersistentSizer | ContractSizer, key: str) -> str:
    inner = sizer.sizer if isinstance(sizer, PersistentSizer) else sizer
    return dumps(inner.snapshot(key))  # as the store writes it (NaN as null)


def test_the_state_round_trips_through_the_database(db_url: str, driver) -> None:
    writer = driver.open_sizer(db_url, driver.STREAM_SIZING)
    for _ in driver.drive(writer, driver.stream(40, types=3), 0):
        pass
    reader = driver.open_sizer(db_url, driver.STREAM_SIZING)
    keys = writer.sizer.keys()
    assert sorted(reader.versions) == sorted(keys) == ["type-000", "type-001", "type-002"]
    assert sum(reader.versions.values()) == reader.store.committed() == 40
    for key in keys:
        assert state_text(reader, key) == state_text(writer, key)
    f = Features(input_size=3e8, request=4e9)
    assert [reader.first(k, f) for k in reader.versions] == [
        writer.first(k, f) for k in reader.versions
    ]


def test_a_process_killed_between_two_outcomes_restarts_as_if_never_stopped(
    tmp_path: Path, driver
) -> None:
    events, kill_after = 50, 20
    reference = driver.open_sizer(f"sqlite:///{tmp_path / 'ref.sqlite'}", driver.STREAM_SIZING)
    expected = {i: (repr(float(a)), repr(float(r)))
                for i, a, r, *_ in driver.drive(reference, driver.stream(events, types=3), 0)}  # fmt: skip
    db = f"sqlite:///{tmp_path / 'killed.sqlite'}"
    child = driver.spawn(db, events, "--types", "3")
    seen = {}
    for line in child.stdout:
        i, first, retry = line.split()
        seen[int(i)] = (first, retry)
        if int(i) == kill_after:
            child.send_signal(signal.SIGKILL)
            break
    child.wait()
    assert child.returncode == -signal.SIGKILL
    restarted = driver.open_sizer(db, driver.STREAM_SIZING)
    start = restarted.store.committed()
    assert start > kill_after  # every outcome it acknowledged (printed) is there
    for i, a, r, *_ in driver.drive(restarted, driver.stream(events, types=3), start):
        seen[i] = (repr(float(a)), repr(float(r)))
    assert seen == expected


def test_two_processes_share_one_state_without_losing_an_update(db_url: str, driver) -> None:
    events, sizing = 40, {"shadow_choice": False}  # learning then reads a type's own state only
    ranks = [
        driver.spawn(db_url, events, "--types", "3", "--rank", str(r), "--ranks", "2",
                     "--sizing", json.dumps(sizing))
        for r in range(2)
    ]  # fmt: skip
    assert [p.stdout.readline().strip() for p in ranks] == ["ready", "ready"]
    for p in ranks:
        p.stdin.write("go\n")
        p.stdin.flush()
    assert [p.wait() for p in ranks] == [0, 0]
    store = SizingStateStore(make_engine(db_url))
    committed = store.read()
    assert sum(v for v, _ in committed.values()) == events
    stream = driver.stream(events, types=3)
    replay = ContractSizer(SizingSettings(**driver.STREAM_SIZING, **sizing))
    for key, (version, snapshot) in committed.items():
        log = store.outcomes(key)
        assert [seq for seq, _, _ in log] == list(range(1, version + 1))
        learnt = sorted(json.dumps(o, sort_keys=True) for _, _, o in log)
        sent = sorted(
            json.dumps(e.outcome.__dict__, sort_keys=True) for e in stream if e.key == key
        )
        assert learnt == sent  # each outcome exactly once
        for _, features, outcome in log:  # the committed order, applied afresh
            replay.learn(key, features_from_dict(features), Outcome(**outcome))
        # the other types' pooled prior is a cache the writers built while sizing (the
        # replay only learns): the type's own outcomes must agree to the bit
        ours = {k: v for k, v in replay.snapshot(key).items() if k != "prior"}
        assert dumps(ours) == dumps({k: v for k, v in snapshot.items() if k != "prior"})


def test_a_stale_writer_re_reads_and_applies_its_outcome_on_the_newer_state(db_url: str) -> None:
    sizing = SizingSettings(prior_refresh_share=0.0)
    first, second = (
        PersistentSizer.open(db_url, sizing=sizing, settings=SizingStateSettings())
        for _ in range(2)
    )
    f = Features(input_size=1e8, request=8e9)
    one, two = Outcome(2e9, 600.0), Outcome(3e9, 900.0)
    append = second.store.append

    def lose_the_race(*args, **kwargs) -> bool:  # the other process commits in between
        if not second.conflicts:
            first.learn("align", f, one)
        return append(*args, **kwargs)

    second.store.append = lose_the_race
    assert second.learn("align", f, two) == 2
    assert second.conflicts == 1 and first.versions == {"align": 1}
    assert [o["need"] for _, _, o in second.store.outcomes("align")] == [2e9, 3e9]
    fresh = ContractSizer(sizing)
    fresh.learn("align", f, one)
    fresh.learn("align", f, two)
    assert state_text(second, "align") == state_text(fresh, "align")
    first.refresh(force=True)
    assert state_text(first, "align") == state_text(fresh, "align")


def test_an_outcome_at_a_stale_version_writes_nothing_and_old_log_rows_are_pruned(
    tmp_path: Path,
) -> None:
    store = SizingStateStore(make_engine(f"sqlite:///{tmp_path / 's.sqlite'}"), keep_outcomes=4)
    store.create()
    for version in range(8):
        assert store.append("k", version, {}, {"need": version}, {"v": version + 1})
    assert not store.append("k", 6, {}, {"need": -1}, {"v": -1})
    assert store.read(["k"]) == {"k": (8, {"v": 8})}
    assert [seq for seq, _, _ in store.outcomes("k")] == [5, 6, 7, 8]


def test_an_outcome_that_did_not_commit_is_not_kept_in_memory(tmp_path: Path) -> None:
    sizing = SizingSettings(prior_refresh_share=0.0)
    sizer = PersistentSizer.open(
        f"sqlite:///{tmp_path / 's.sqlite'}", sizing=sizing, settings=SizingStateSettings()
    )
    f, kept = Features(input_size=1e8), Outcome(2e9, 600.0)
    sizer.learn("kept", f, kept)
    committed = state_text(sizer, "kept")

    def database_gone(*args, **kwargs) -> bool:
        raise OSError("connection lost")

    sizer.store.append = database_gone
    for key in ("new", "kept"):
        with pytest.raises(OSError):
            sizer.learn(key, f, Outcome(3e9, 900.0))
    assert sizer.sizer.keys() == ["kept"] and sizer.versions == {"kept": -1}
    del sizer.store.append
    sizer.refresh(force=True)
    assert state_text(sizer, "kept") == committed and sizer.versions == {"kept": 1}
    for bad in (Outcome(0.0, 1.0), Outcome(float("nan"), 1.0), Outcome(1e9, -1.0)):
        with pytest.raises(ValueError, match="'kept'"):
            sizer.learn("kept", f, bad)
