"""History features: look-ahead-free by construction, and equal to a brute-force reference."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.config import HistorySettings
from scoutless.features.history import (
    TEMPLATE_COLUMN,
    feature_name,
    history_features,
    history_keys,
    history_specs,
    seconds,
    template_labels,
    with_derived_keys,
)
from scoutless.features.running_stats import last_k_quantiles, latest_quantiles, mean_of_last2

CFG = HistorySettings(last_k=3, ewm_halflife_jobs=2.0)

jobs = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", None]),  # user
        st.sampled_from(["x", "y"]),  # executable
        st.integers(0, 60),  # submit
        st.one_of(st.integers(1, 40), st.none()),  # runtime (None: never finished)
        st.floats(0.5, 1e4, allow_nan=False),  # walltime value
        st.floats(1.0, 1e4, allow_nan=False),  # request
    ),
    min_size=1,
    max_size=20,
)


def _frame(rows: list[tuple]) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    frame = pd.DataFrame(
        {"user": [r[0] for r in rows], "executable": [r[1] for r in rows],
         "walltime": [r[4] for r in rows], "request": [r[5] for r in rows]}
    )  # fmt: skip
    submit = np.array([float(r[2]) for r in rows])
    finished = np.array([np.nan if r[3] is None else r[2] + r[3] for r in rows], dtype=float)
    return frame, submit, finished


def _features(frame: pd.DataFrame, submit: np.ndarray, finished: np.ndarray) -> pd.DataFrame:
    return history_features(
        frame, keys={"user": "user", "app": "executable"},
        values={"walltime": frame["walltime"].to_numpy(float)},
        submit_s=submit, finished_s=finished,
        requests={"walltime": frame["request"].to_numpy(float)}, cfg=CFG,
    )  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(jobs, st.data())
def test_no_feature_uses_a_job_finished_at_or_after_submit(rows, data):
    """Scramble every job that had not finished before job i was submitted: i's features
    must not move (the leakage property)."""
    frame, submit, finished = _frame(rows)
    before = _features(frame, submit, finished)
    i = data.draw(st.integers(0, len(rows) - 1))
    unseen = ~(finished < submit[i])
    unseen[i] = True
    scrambled = frame.copy()
    noise = data.draw(st.lists(st.floats(0.5, 1e6), min_size=len(rows), max_size=len(rows)))
    scrambled.loc[unseen, "walltime"] = np.array(noise)[unseen]
    # an unseen job may also end later (or never) without changing what i saw
    later = finished.copy()
    later[unseen & np.isfinite(finished)] += data.draw(st.integers(0, 30))
    after = _features(scrambled, submit, later)
    pd.testing.assert_series_equal(before.iloc[i], after.iloc[i], check_names=False)


@settings(max_examples=40, deadline=None)
@given(jobs)
def test_matches_brute_force(rows):
    frame, submit, finished = _frame(rows)
    got = _features(frame, submit, finished)
    values = frame["walltime"].to_numpy(float)
    for i in range(len(rows)):
        user = rows[i][0]
        seen = [j for j in range(len(rows)) if user is not None and rows[j][0] == user
                and np.isfinite(finished[j]) and finished[j] < submit[i]]  # fmt: skip
        seen.sort(key=lambda j: (finished[j], j))
        row = got.iloc[i]
        if user is None:
            assert np.isnan(row[feature_name("user", "n_finished")])
            continue
        assert row[feature_name("user", "n_finished")] == len(seen)
        if not seen:
            assert np.isnan(row[feature_name("user", "last", "walltime")])
            continue
        v = values[seen]
        assert row[feature_name("user", "last", "walltime")] == v[-1]
        assert np.isclose(row[feature_name("user", "mean2", "walltime")], v[-2:].mean())
        assert np.isclose(row[feature_name("user", "qmid", "walltime")], np.median(v[-3:]))
        assert np.isclose(row[feature_name("user", "since_last_finish_s")],
                          submit[i] - finished[seen].max())  # fmt: skip
        w = 0.5 ** (np.arange(len(v))[::-1] / CFG.ewm_halflife_jobs)
        logv = np.log1p(v)
        assert np.isclose(np.log1p(row[feature_name("user", "ewm", "walltime")]),
                          (w * logv).sum() / w.sum())  # fmt: skip
        requests = frame["request"].to_numpy(float)[seen]
        assert np.isclose(row[feature_name("user", "request_err", "walltime")],
                          _ew_mean(np.abs(logv - np.log1p(requests))))  # fmt: skip
        # last-2 replayed over the seen jobs in end order: each predicted by the two before
        errors = [abs(logv[k] - np.log1p(v[max(k - 2, 0) : k].mean())) for k in range(1, len(v))]
        expected = _ew_mean(np.array(errors)) if errors else np.nan
        assert np.isclose(row[feature_name("user", "last2_err", "walltime")], expected,
                          equal_nan=True)  # fmt: skip


def _ew_mean(x: np.ndarray) -> float:
    """Weights 0.5 ** (age / half-life), the newest with age 0."""
    w = 0.5 ** (np.arange(len(x))[::-1] / CFG.ewm_halflife_jobs)
    return float((w * x).sum() / w.sum())


def test_keys_specs_and_request_features():
    frame = pd.DataFrame({"user": ["u", "u"], "executable": ["e", "e"],
                          "walltime": [100.0, 300.0], "request": [200.0, 600.0]})  # fmt: skip
    out = _features(frame, np.array([0.0, 500.0]), np.array([100.0, 800.0]))
    assert history_keys(["queue", "user", "executable"]) == {"user": "user", "app": "executable"}
    specs = history_specs(["user", "app"], ["walltime"], ["walltime"])
    assert [s.name for s in specs] == list(out.columns)
    # the second job sees the first: it used half its request, so half of 600 is expected
    assert out[feature_name("user", "request_scaled", "walltime")][1] == pytest.approx(300.0)
    assert out[feature_name("user", "since_last_submit_s")][1] == 500.0


def test_template_key_is_the_user_and_the_request():
    keys = history_keys(["user", "executable", "requested_processors", "walltime_request"])
    assert keys["template"] == TEMPLATE_COLUMN
    assert "template" not in history_keys(["user", "executable"])  # no request: no template
    assert "template" not in history_keys(["executable", "walltime_request"])  # no user
    frame = pd.DataFrame({
        "user": ["7", 7.0, None, "7"], "requested_processors": [4, 4.0, 4, np.nan],
        "walltime_request": [3600.0, 3600, 3600.0, 3600.0],
    })  # fmt: skip
    # a request read as 4 or 4.0 (a NULL in the column) is the same template; no user: none
    assert template_labels(frame, "user") == ["7|4|3600", "7|4|3600", None, "7||3600"]
    derived = with_derived_keys(frame, keys)[TEMPLATE_COLUMN]
    assert [None if pd.isna(v) else v for v in derived] == template_labels(frame, "user")
    assert TEMPLATE_COLUMN not in with_derived_keys(frame, {"user": "user"})


def test_template_history_follows_the_template_not_the_user():
    frame = pd.DataFrame({"user": ["u", "u", "u"], "walltime_request": [60.0, 7200.0, 60.0],
                          "walltime": [50.0, 7000.0, 55.0]})  # fmt: skip
    keys = history_keys(list(frame.columns))
    out = history_features(
        frame, keys=keys, values={"walltime": frame["walltime"].to_numpy(float)},
        submit_s=np.array([0.0, 100.0, 9000.0]), finished_s=np.array([50.0, 7100.0, 9055.0]),
        cfg=CFG,
    )  # fmt: skip
    # the third job's user last ran the long one; its template last ran the short one
    assert out[feature_name("user", "last", "walltime")][2] == 7000.0
    assert out[feature_name("template", "last", "walltime")][2] == 50.0


def test_seconds_is_unit_independent():
    times = pd.Series(pd.to_datetime(["1970-01-01T00:01:00Z", None], utc=True))
    assert seconds(times.astype("datetime64[s, UTC]"))[0] == 60.0
    assert seconds(times)[0] == 60.0 and np.isnan(seconds(times)[1])


_ZONES = [None, UTC, timezone(timedelta(hours=-5, minutes=-30))]


def _as_given(t: datetime, form: int) -> object:
    """One time as a task row or a client may hold it."""
    if form == 0:
        return t
    if form == 1:
        return pd.Timestamp(t)
    if form == 2:  # SQLite's DateTime text (naive: UTC)
        return t.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")
    return t.isoformat()


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(_ZONES).flatmap(
        lambda zone: st.lists(
            st.datetimes(datetime(1990, 1, 1), datetime(2040, 1, 1), timezones=st.just(zone))
            | st.none(),
            min_size=1,
            max_size=8,
        )
    ),
    st.integers(0, 3),
)
def test_a_few_times_convert_without_pandas_to_the_very_same_seconds(times, form):
    """Each value as pandas converts it (alone: pandas infers one format per column, and
    an ISO text without microseconds then makes one with them NaT)."""
    plain = [None if t is None else _as_given(t, form) for t in times]
    alone = [seconds(pd.Series([v], dtype=object))[0] for v in plain]
    np.testing.assert_array_equal(seconds(plain), alone)


def test_values_seconds_does_not_know_go_to_pandas():
    odd = [np.datetime64("2024-01-02T03:04:05"), "02/01/2024", 1.7e18, None]
    np.testing.assert_array_equal(seconds(odd), seconds(pd.Series(odd, dtype=object)))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e9, allow_nan=False), min_size=1, max_size=15),
    st.integers(1, 12),
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=4),
)
def test_the_latest_quantiles_in_plain_floats_are_the_vectorised_ones(values, k, quantiles):
    x = np.asarray(values)
    swept = last_k_quantiles(np.zeros(len(x), dtype=np.int64), x, k, quantiles)[-1]
    np.testing.assert_array_equal(latest_quantiles(values, k, quantiles), swept)


def test_the_mean_of_the_last_two_near_a_floats_top_is_finite_in_training_and_service() -> None:
    """Two values near the largest float overflow their sum: the mean is taken of halves,
    the same operations in training's vectorised path and the service's running one."""
    big = [1.2e308, 1.6e308, 1.0e308]
    frame = pd.DataFrame({"user": ["a"] * 3, "executable": ["x"] * 3, "walltime": big,
                          "request": [1.0] * 3})  # fmt: skip
    got = _features(frame, np.array([0.0, 10.0, 20.0]), np.array([1.0, 11.0, 21.0]))
    mean2 = got[feature_name("user", "mean2", "walltime")].to_numpy()
    assert mean2[1] == 1.2e308 and mean2[2] == pytest.approx(1.4e308)
    assert mean2[2] == mean_of_last2(big[:2])
