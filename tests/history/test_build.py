"""History in a real database → training table: targets, classes, splits, bad rows, leakage."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from panda_history import load_into, make_history_frames

from scoutless.config import ReplaySettings, Settings
from scoutless.features.domains import domains
from scoutless.features.spec import MEASURED_COLUMNS, PANDA_FEATURES
from scoutless.history.build import build_training_table
from scoutless.history.panda_db import read_history
from scoutless.history.table import TableError, TrainingTable
from scoutless.history.task_reader import fetch_task_features
from scoutless.history.validation import BadRowsError
from scoutless.targets.spec import TARGET_NAMES, class_col, scout_class_col, value_col


def test_sqlite_roundtrip_builds_one_row_per_task(sqlite_engine, history_frames, tmp_path):
    load_into(sqlite_engine, history_frames)
    history = read_history(sqlite_engine)
    assert len(history.tasks) == 40 and len(history.jobs) == 40 * 15
    table, report = build_training_table(history, settings=Settings())
    assert len(report) == 0
    frame = table.frame
    assert len(frame) == 40 and frame["jeditaskid"].is_unique
    for t in TARGET_NAMES:
        assert frame[class_col(t)].between(0, table.bins[t].n_classes - 1).all()
        assert frame[scout_class_col(t)].ge(0).all()
    # reco tasks need ~3 GB/core -> class 2-4GB; evgen ~0.6 GB -> <=1GB
    by_type = frame.groupby("processingtype")[class_col("memory")].agg(lambda s: s.mode()[0])
    assert by_type["reco"] == 2 and by_type["evgen"] == 0
    assert set(frame["split_random"]) == {"train", "test"}
    n_test = (frame["split_time"] == "test").sum()
    assert n_test == 6  # 15 % of 40
    latest_train = frame.loc[frame.split_time == "train", "creationdate"].max()
    assert frame.loc[frame.split_time == "test", "creationdate"].min() > latest_train
    assert frame["scout_wait_hours"].gt(0).all()
    # the table round-trips through parquet with its metadata
    path = table.save(tmp_path / "table.parquet")
    again = TrainingTable.load(path)
    assert again.feature_names == table.feature_names
    assert again.bins["memory"].edges == table.bins["memory"].edges
    pd.testing.assert_frame_equal(again.frame, table.frame, check_dtype=False)


def test_features_are_known_at_submission_only(history_frames):
    from scoutless.history.panda_db import History

    f = history_frames
    history = History(
        f["jedi_tasks"], f["jedi_taskparams"].set_index("jeditaskid")["taskparams"],
        f["jedi_datasets"], f["jobsarchived4"],
    )  # fmt: skip
    table, _ = build_training_table(history, settings=Settings())
    names = set(table.feature_names)
    assert not names & MEASURED_COLUMNS
    # every measured or scout-overwritten column stays out, even though it is in the history
    for col in ("ramcount", "maxpss", "walltime", "cputime", "iointensity", "endtime"):
        assert col not in names
    features = table.X()
    for t in TARGET_NAMES:
        assert value_col(t) not in features.columns
    # taskparams and dataset counts reach the features
    assert features["nevents_per_job"].eq(100).all()
    assert features["input_nfiles"].iloc[0] == 10


def test_leaky_feature_list_is_refused(history_frames):
    from scoutless.features.spec import FeatureSpec
    from scoutless.history.panda_db import History

    f = history_frames
    history = History(
        f["jedi_tasks"], pd.Series(dtype=object), f["jedi_datasets"], f["jobsarchived4"]
    )
    table, _ = build_training_table(history, settings=Settings())
    frame = table.frame.assign(ramcount=1.0)
    with pytest.raises(TableError, match="leakage"):
        TrainingTable(frame, [*PANDA_FEATURES, FeatureSpec("ramcount", "numerical")], table.bins)


def _history_with_bad_rows():
    from scoutless.history.panda_db import History

    f = make_history_frames(n_tasks=12, jobs_per_task=6)
    jobs = f["jobsarchived4"].copy()
    jobs.loc[0, "maxpss"] = -5  # negative
    jobs.loc[1, "endtime"] = jobs.loc[1, "starttime"] - pd.Timedelta(seconds=10)  # impossible
    jobs.loc[2, "starttime"] = None  # missing
    tasks = f["jedi_tasks"].copy()
    tasks.loc[3, "corecount"] = 0
    params = f["jedi_taskparams"].set_index("jeditaskid")["taskparams"].copy()
    params.iloc[4] = "{not json"
    # task 5 keeps only 2 finished jobs -> too few for a target
    tid5 = tasks.loc[5, "jeditaskid"]
    idx = jobs.index[jobs.jeditaskid == tid5][2:]
    jobs.loc[idx, "jobstatus"] = "failed"
    return History(tasks, params, f["jedi_datasets"], jobs), tasks, jobs


def test_bad_rows_are_reported_with_place_and_reason_and_excluded():
    history, tasks, jobs = _history_with_bad_rows()
    table, report = build_training_table(history, settings=Settings())
    bad = report.frame()
    job_rows = bad[bad.table == "jobsarchived4"]
    reasons = dict(zip(job_rows["pandaid"].astype(int), job_rows["reason"], strict=True))
    assert reasons[int(jobs.loc[0, "pandaid"])] == "negative maxpss"
    assert reasons[int(jobs.loc[1, "pandaid"])] == "endtime before starttime"
    assert reasons[int(jobs.loc[2, "pandaid"])] == "missing start/end time"
    task_reasons = bad[bad.table == "jedi_tasks"].set_index("jeditaskid")["reason"]
    assert task_reasons[tasks.loc[3, "jeditaskid"]] == "non-positive corecount"
    assert task_reasons[tasks.loc[4, "jeditaskid"]] == "taskparams is not a JSON object"
    assert "usable finished jobs" in task_reasons[tasks.loc[5, "jeditaskid"]]
    # excluded tasks are not in the table; every other task is
    kept = set(table.frame["jeditaskid"])
    assert kept == set(tasks["jeditaskid"]) - {tasks.loc[i, "jeditaskid"] for i in (3, 4, 5)}
    assert sum(report.counts().values()) == len(report) == 6
    assert table.info["excluded"]


def test_strict_fails_with_the_places():
    history, tasks, _ = _history_with_bad_rows()
    with pytest.raises(BadRowsError, match=f"task {tasks.loc[3, 'jeditaskid']}"):
        build_training_table(history, strict=True, settings=Settings())


def test_fetch_task_features_matches_training_features(sqlite_engine, history_frames):
    load_into(sqlite_engine, history_frames)
    table, _ = build_training_table(read_history(sqlite_engine), settings=Settings())
    tid = int(table.frame["jeditaskid"].iloc[7])
    served = pd.DataFrame([fetch_task_features(sqlite_engine, tid, domains(ReplaySettings()))], index=[tid])
    trained = table.frame.set_index("jeditaskid").loc[[tid], table.feature_names]
    pd.testing.assert_frame_equal(served, trained, check_dtype=False, check_names=False)


def test_custom_bins_file_and_quantile_mode(history_frames, tmp_path):
    from scoutless.history.panda_db import History

    bins_file = tmp_path / "bins.toml"
    bins_file.write_text(
        '[memory]\nedges = [0, 2500, inf]\nlabels = ["small", "large"]\n'
        '[walltime]\nmode = "quantiles"\nn_classes = 3\n'
    )
    f = history_frames
    history = History(
        f["jedi_tasks"], pd.Series(dtype=object), f["jedi_datasets"], f["jobsarchived4"]
    )
    table, _ = build_training_table(history, bins_file=bins_file, settings=Settings())
    assert table.bins["memory"].labels == ("small", "large")
    assert table.bins["walltime"].n_classes == 3
    counts = np.bincount(table.frame[class_col("walltime")], minlength=3)
    assert counts.min() >= 10  # equal-mass classes
    assert json.loads(json.dumps(table.metadata()))["bins"]["memory"]["edges"][-1] == "inf"


def test_chunked_build_matches_one_pass(sqlite_engine, history_frames):
    from scoutless.history.build import build_table_from_db

    load_into(sqlite_engine, history_frames)
    whole, _ = build_table_from_db(sqlite_engine, settings=Settings())
    seen = []
    chunked, _ = build_table_from_db(
        sqlite_engine, chunk_tasks=7, on_chunk=lambda d, t: seen.append((d, t)), settings=Settings()
    )
    pd.testing.assert_frame_equal(whole.frame, chunked.frame)
    assert seen[-1] == (40, 40) and len(seen) == 6


def test_empty_history_says_so(sqlite_engine):
    from scoutless.history.build import build_table_from_db
    from scoutless.history.panda_db import create_schema

    create_schema(sqlite_engine)
    with pytest.raises(BadRowsError, match="no tasks"):
        build_table_from_db(sqlite_engine, settings=Settings())


def test_task_history_features_use_only_tasks_finished_before(sqlite_engine, history_frames):
    load_into(sqlite_engine, history_frames)
    table, _ = build_training_table(read_history(sqlite_engine), with_history=True, settings=Settings())
    frame = table.frame
    names = set(table.feature_names)
    assert {"user_n_finished", "app_walltime_mean2", "campaign_memory_ewm"} <= names
    assert not names & MEASURED_COLUMNS and "finished_at" not in names
    for _, task in frame.iterrows():
        earlier = frame[(frame["username"] == task["username"])
                        & (frame["finished_at"] < task["creationdate"])]  # fmt: skip
        assert task["user_n_finished"] == len(earlier)
        if len(earlier):
            last = earlier.sort_values("finished_at", kind="stable").iloc[-1]
            assert task["user_memory_last"] == pytest.approx(last[value_col("memory")])


def test_bins_and_recommendations_are_fitted_on_training_rows_only(history_frames, tmp_path):
    """Quantile edges and recommended values never see a test row (no evaluation leak)."""
    from scoutless.config import Settings
    from scoutless.history.build import finish_table, task_rows
    from scoutless.history.panda_db import History
    from scoutless.history.validation import BadRowReport

    f = history_frames
    history = History(
        f["jedi_tasks"], f["jedi_taskparams"].set_index("jeditaskid")["taskparams"],
        f["jedi_datasets"], f["jobsarchived4"],
    )  # fmt: skip
    bins_file = tmp_path / "bins.toml"
    bins_file.write_text('[walltime]\nmode = "quantiles"\nn_classes = 3\n')
    settings = Settings()
    frame = task_rows(history, BadRowReport(), settings)
    table = finish_table(frame, BadRowReport(), settings=settings, bins_file=bins_file)
    test = (table.frame["split_random"] == "test").to_numpy()
    moved = frame.copy()
    moved.loc[test, value_col("walltime")] *= 100
    again = finish_table(moved, BadRowReport(), settings=settings, bins_file=bins_file)
    assert (again.frame["split_random"] == table.frame["split_random"]).all()
    assert again.bins["walltime"].edges == table.bins["walltime"].edges
    assert again.bins["walltime"].recommended == table.bins["walltime"].recommended
    assert table.info["bins_fitted_on"] == "split_random train rows"
