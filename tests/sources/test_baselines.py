import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.config import HistorySettings
from scoutless.sources.baselines import last2, user_history, user_request, with_fallback

CFG = HistorySettings()


def test_last2_counts_only_jobs_finished_before_submit():
    # user a: job0 ends at 10, job1 ends at 20, job2 ends at 100; job3 submitted at 50
    values = np.array([1.0, 3.0, 1000.0, 7.0])
    users = np.array(["a", "a", "a", "a"])
    submit = np.array([0.0, 5.0, 6.0, 50.0])
    finished = np.array([10.0, 20.0, 100.0, 60.0])
    pred = last2(values, users, submit, finished, CFG)
    # job1 (submitted at 5): nothing finished yet; job2 (at 6): nothing either
    assert np.isnan(pred[:3]).all()
    assert pred[3] == 2.0  # mean of 1 and 3; the 1000 still running is not seen


def test_last2_uses_one_job_when_only_one_finished_and_separates_users():
    values = np.array([4.0, 8.0, 100.0])
    users = np.array(["a", "a", "b"])
    submit = np.array([0.0, 10.0, 11.0])
    finished = np.array([5.0, 20.0, 30.0])
    hist = user_history(values, users, submit, finished, CFG)
    assert hist.mean2[1] == 4.0 and hist.n_finished[1] == 1
    assert np.isnan(hist.mean2[2])  # user b has no history, a's jobs do not count


def test_finishing_at_the_submit_second_does_not_count():
    pred = last2(np.array([1.0, 2.0]), np.array(["u", "u"]), np.array([0.0, 10.0]),
                 np.array([10.0, 11.0]), CFG)  # fmt: skip
    assert np.isnan(pred[1])


def test_user_request_unknown_and_fallback():
    req = user_request(np.array([3600.0, -1.0, 0.0, np.nan]))
    assert req[0] == 3600.0 and np.isnan(req[1:]).all()
    assert list(with_fallback(np.array([np.nan, 5.0]), np.array([1.0, 2.0]))) == [1.0, 5.0]


jobs = st.lists(
    st.tuples(
        st.integers(0, 2),  # user
        st.integers(0, 100),  # submit
        st.integers(1, 50),  # runtime
        st.floats(0, 1e4, allow_nan=False),  # value
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=100, deadline=None)
@given(jobs)
def test_last2_matches_brute_force(rows):
    users = np.array([r[0] for r in rows])
    submit = np.array([float(r[1]) for r in rows])
    finished = submit + np.array([float(r[2]) for r in rows])
    values = np.array([r[3] for r in rows])
    pred = last2(values, users, submit, finished, CFG)
    for i in range(len(rows)):
        seen = [j for j in range(len(rows)) if users[j] == users[i] and finished[j] < submit[i]]
        seen.sort(key=lambda j: (finished[j], j))
        if not seen:
            assert np.isnan(pred[i])
        else:
            expected = np.mean(values[seen[-2:]])
            assert np.isclose(pred[i], expected)
