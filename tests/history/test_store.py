"""The online store answers with the very features training computed (parity)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sqlalchemy import Column, MetaData, Table, create_engine

from scoutless.config import HistorySettings
from scoutless.features.history import (
    TEMPLATE_COLUMN,
    history_features,
    history_keys,
    history_specs,
    seconds,
    template_labels,
)
from scoutless.history.store import (
    ADDED_COLUMNS,
    HISTORY_TABLE,
    _row,
    apply_jobs,
    features_from_states,
    history_state,
    read_states,
    state_features,
    update_store,
)

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
    update_store(engine, trace(30), KEYS, ["walltime"], CFG)
    request = pd.DataFrame({"user": ["nobody"], "executable": [None],
                            "creationdate": [pd.Timestamp("2025-01-01", tz="UTC")]})  # fmt: skip
    with engine.connect() as conn:
        states = read_states(conn, [("user", "nobody")])
    got, found = features_from_states(states, request, KEYS, ["walltime"], cfg=CFG)
    assert not found[0] and got["user_n_finished"][0] == 0.0
    assert np.isnan(got["user_walltime_mean2"][0]) and np.isnan(got["app_n_finished"][0])


def test_a_store_created_before_the_expert_errors_gains_them(tmp_path):
    """An older table (no expert-error columns) is migrated in place; its rows keep their
    history and the errors count from the next finished job on."""
    engine = create_engine(f"sqlite:///{tmp_path / 'store.sqlite'}")
    old = MetaData()
    Table(HISTORY_TABLE, old, *(Column(c.name, c.type, primary_key=c.primary_key)
                                for c in history_state.columns if c.name not in ADDED_COLUMNS))  # fmt: skip
    old.create_all(engine)
    jobs = trace(60)
    first, later = jobs.iloc[:30], jobs.iloc[30:]
    with engine.begin() as conn:  # rows written by the older code: no error columns
        states: dict = {}
        apply_jobs(states, first, KEYS, ["walltime"], CFG)
        rows = [{k: v for k, v in _row(key, s, pd.Timestamp.now().to_pydatetime()).items()
                 if k not in ADDED_COLUMNS} for key, s in states.items()]  # fmt: skip
        conn.execute(old.tables[HISTORY_TABLE].insert(), rows)
    update_store(engine, later, KEYS, ["walltime"], CFG)
    with engine.connect() as conn:
        got = read_states(conn, [("user", "a")])[("user", "a", "walltime")]
    assert got.n == int(((jobs["user"] == "a") & jobs["walltime_value"].notna()).sum())
    assert got.last2_err_ew[2] > 0  # the jobs applied after the migration count


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
