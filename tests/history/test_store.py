"""The online store answers with the very features training computed (parity)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import orjson
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from legacy_store import comparable, write_legacy
from sqlalchemy import create_engine, func, inspect, select

from scoutless.config import HistorySettings
from scoutless.features.history import (
    TEMPLATE_COLUMN,
    history_features,
    history_keys,
    history_specs,
    seconds,
    template_labels,
)
from scoutless.features.key_state import KeyState
from scoutless.features.running_stats import EW_EMPTY
from scoutless.history.panda_db import make_engine
from scoutless.history.store import (
    LEGACY_TABLE,
    apply_jobs,
    create_history_table,
    key_states,
    migrate_legacy,
    pack_state,
    read_states,
    states_of_key,
    update_store,
)
from scoutless.history.store_reader import features_from_states, state_features

CFG = HistorySettings(last_k=4, ewm_halflife_jobs=2.0)
KEYS = history_keys(["user", "executable", "walltime_request"])


def trace(n: int = 120, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    submit = pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(
        np.sort(rng.uniform(0, 5 * 86400, n)), unit="s"
    )
    run = rng.uniform(60, 40000, n)
    return pd.DataFrame({
        "user": rng.choice(["a", "b", "c", None], n), "executable": rng.choice(["x", "y"], n),
        "creationdate": submit, "finished_at": submit + pd.to_timedelta(run, unit="s"),
        "walltime_value": run, "walltime_request": rng.choice([3600, 7200.0, np.nan], n),
        "memory_value": np.where(rng.random(n) < 0.2, np.nan, rng.uniform(100, 4000, n)),
    })  # fmt: skip


def test_store_features_equal_training_features(tmp_path):
    jobs = trace()
    targets = ["walltime", "memory"]
    expected = history_features(
        jobs, keys=KEYS, values={t: jobs[f"{t}_value"].to_numpy(float) for t in targets},
        submit_s=seconds(jobs["creationdate"]), finished_s=seconds(jobs["finished_at"]),
        requests={"walltime": jobs["walltime_request"].to_numpy(float)}, cfg=CFG,
    )  # fmt: skip
    engine = create_engine(f"sqlite:///{tmp_path / 'store.sqlite'}")
    submit, end = seconds(jobs["creationdate"]), seconds(jobs["finished_at"])
    applied = np.zeros(len(jobs), dtype=bool)
    for j in range(40, len(jobs), 9):  # the store grows between requests, as in service
        fresh = ~applied & (end < submit[j]) & (submit < submit[j])
        done = jobs[fresh]  # the finished ones, with their submissions
        update_store(engine, done, KEYS, targets, CFG)
        applied |= fresh
        # jobs submitted but still running at submit[j]: only their submission is known
        running = jobs[~applied & (submit < submit[j])].assign(finished_at=pd.NaT)
        labelled = jobs.assign(**{TEMPLATE_COLUMN: template_labels(jobs, "user")})
        pairs = {(k, str(v)) for k, c in KEYS.items() for v in labelled[c].dropna()}
        with engine.connect() as conn:
            states = read_states(conn, pairs)
        apply_jobs(states, running, KEYS, targets, CFG)
        got, found = features_from_states(
            states, jobs.iloc[[j]], KEYS, targets, with_request=["walltime"], cfg=CFG
        )
        names = [s.name for s in history_specs(list(KEYS), targets, ["walltime"])]
        assert list(got.columns) == names
        np.testing.assert_allclose(
            got.iloc[0].to_numpy(float), expected.iloc[j][names].to_numpy(float),
            rtol=1e-9, equal_nan=True, err_msg=f"job {j}",
        )  # fmt: skip
        assert found[0] == any(expected.iloc[j][f"{k}_n_finished"] > 0 for k in KEYS)


def test_unknown_key_has_no_history_and_is_flagged(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'store.sqlite'}")
    written = update_store(engine, trace(30), KEYS, ["walltime"], CFG)
    with engine.connect() as conn:  # one row per key, each counted once
        assert written == conn.execute(select(func.count()).select_from(key_states)).scalar()
    assert written == sum(trace(30)[c].nunique() for c in ("user", "executable")) + len(
        {v for v in template_labels(trace(30), "user") if v is not None}
    )
    request = pd.DataFrame({"user": ["nobody"], "executable": [None],
                            "creationdate": [pd.Timestamp("2025-01-01", tz="UTC")]})  # fmt: skip
    with engine.connect() as conn:
        states = read_states(conn, [("user", "nobody")])
    got, found = features_from_states(states, request, KEYS, ["walltime"], cfg=CFG)
    assert not found[0] and got["user_n_finished"][0] == 0.0
    assert np.isnan(got["user_walltime_mean2"][0]) and np.isnan(got["app_n_finished"][0])


@pytest.mark.parametrize("with_errors", [True, False])
def test_a_legacy_store_is_moved_to_one_row_per_key(tmp_path, with_errors):
    """The first layout (one row per key and target, with or without the experts' error
    columns) is moved into one row per key at the next update: every key keeps its
    history, the errors count from the next finished job where the table had none, and
    the legacy table is gone."""
    engine = create_engine(f"sqlite:///{tmp_path / 'store.sqlite'}")
    jobs = trace(60)
    first, later = jobs.iloc[:30], jobs.iloc[30:]
    before: dict = {}
    apply_jobs(before, first, KEYS, ["walltime", "memory"], CFG)
    write_legacy(engine, before, with_errors=with_errors)
    create_history_table(engine)
    assert not inspect(engine).has_table(LEGACY_TABLE)
    with engine.connect() as conn:
        moved = read_states(conn, {(k[0], k[1]) for k in before})
    expected = before if with_errors else {
        k: replace(s, last2_err_ew=EW_EMPTY, request_err_ew=EW_EMPTY) for k, s in before.items()
    }  # fmt: skip
    assert comparable(moved) == comparable(expected)
    update_store(engine, later, KEYS, ["walltime"], CFG)
    with engine.connect() as conn:
        got = read_states(conn, [("user", "a")])[("user", "a", "walltime")]
    assert got.n == int(((jobs["user"] == "a") & jobs["walltime_value"].notna()).sum())
    assert got.last2_err_ew[2] > 0


def test_a_key_already_in_the_current_store_is_not_overwritten_by_the_legacy_one(tmp_path):
    """A process that lost the race to migrate (or a store written by both versions) keeps
    the current row: it is the newer."""
    engine = create_engine(f"sqlite:///{tmp_path / 'store.sqlite'}")
    update_store(engine, trace(40), KEYS, ["walltime"], CFG)
    with engine.connect() as conn:
        current = read_states(conn, [("user", "a")])
    stale = {("user", "a", "walltime"): KeyState(n=1, recent=[5.0]),
             ("user", "zed", "walltime"): KeyState(n=2, recent=[1.0, 2.0])}  # fmt: skip
    write_legacy(engine, stale)
    assert migrate_legacy(engine) == 1  # only the key the current store lacks
    with engine.connect() as conn:
        assert comparable(read_states(conn, [("user", "a")])) == comparable(current)
        zed = read_states(conn, [("user", "zed")])
    assert comparable(zed) == comparable({k: v for k, v in stale.items() if k[1] == "zed"})
    assert migrate_legacy(engine) == 0  # nothing left to move


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
maybe = st.one_of(finite, st.just(float("nan")))
sums = st.tuples(finite, finite, finite)


@given(
    n=st.integers(0, 10**9), end=maybe, submit=maybe, recent=st.lists(finite, max_size=12),
    ew=st.tuples(maybe, maybe, maybe), ratio=st.tuples(maybe, maybe, maybe), l2=sums, rq=sums,
)  # fmt: skip
def test_a_packed_state_reads_back_equal(n, end, submit, recent, ew, ratio, l2, rq):
    state = KeyState(n=n, last_end_s=end, last_submit_s=submit, recent=recent, ew=ew,
                     ratio_ew=ratio, last2_err_ew=l2, request_err_ew=rq)  # fmt: skip
    text = orjson.dumps({"walltime": pack_state(state)}).decode()
    (got,) = states_of_key("user", "a", text).values()
    for field_name in ("n", "recent", "last2_err_ew", "request_err_ew"):
        assert getattr(got, field_name) == getattr(state, field_name)
    for field_name in ("last_end_s", "last_submit_s", "ew", "ratio_ew"):  # NaN: null: NaN
        np.testing.assert_array_equal(getattr(got, field_name), getattr(state, field_name))


def test_a_packed_state_without_later_fields_starts_them_empty():
    (got,) = states_of_key("user", "a", '{"": {"n": 3, "recent": []}}').values()
    assert got.n == 3 and got.last2_err_ew == EW_EMPTY and np.isnan(got.last_end_s)


def test_posted_columns_get_the_same_template_history_as_a_frame(tmp_path):
    """A few posted tasks arrive as name -> values, not a frame: their template is derived
    by the same code, so they read the same store rows."""
    jobs = trace()
    targets = ["walltime"]
    engine = create_engine(f"sqlite:///{tmp_path / 'store.sqlite'}")
    update_store(engine, jobs.iloc[:80], KEYS, targets, CFG)
    asked = jobs.iloc[80:90]
    labelled = asked.assign(**{TEMPLATE_COLUMN: template_labels(asked, "user")})
    with engine.connect() as conn:
        states = read_states(conn, {("template", v) for v in labelled[TEMPLATE_COLUMN].dropna()})
    columns = {c: asked[c].tolist() for c in ("user", "executable", "walltime_request",
                                               "creationdate")}  # fmt: skip
    from_frame, _ = state_features(states, asked, KEYS, targets, cfg=CFG)
    from_columns, _ = state_features(states, columns, KEYS, targets, cfg=CFG)
    names = [n for n in from_frame if n.startswith("template_")]
    assert names and any(np.isfinite(v) for n in names for v in from_frame[n])
    for n in names:
        np.testing.assert_array_equal(from_columns[n], from_frame[n], err_msg=n)


def test_processes_migrating_at_once_all_succeed_and_move_each_key_once(tmp_path):
    """Service workers start together on a legacy store: each migrates or finds it moved."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    states: dict = {}
    apply_jobs(states, trace(80), KEYS, ["walltime"], CFG)
    write_legacy(create_engine(url), states)
    engines = [make_engine(url) for _ in range(4)]
    key_states.create(engines[0])  # then all four migrate at once
    with ThreadPoolExecutor(4) as pool:
        moved = sorted(pool.map(migrate_legacy, engines))
    assert moved == [0, 0, 0, len({(k[0], k[1]) for k in states})]  # one moved them all
    with engines[0].connect() as conn:
        assert comparable(read_states(conn, {(k[0], k[1]) for k in states})) == comparable(states)
    assert not inspect(engines[0]).has_table(LEGACY_TABLE)
