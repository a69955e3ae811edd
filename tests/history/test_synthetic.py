"""The synthetic PanDA history: shape of the tables, determinism, round trip through SQLite."""

from __future__ import annotations

import json
from datetime import datetime

import numpy as np
import pandas as pd
import pytest
from synthetic_helpers import features_of, targets_of

from scoutless.features.extract import FEATURE_NAMES
from scoutless.history.panda_db import (
    DATASET_COLUMNS,
    JOB_COLUMNS,
    TASK_COLUMNS,
    make_engine,
    read_history,
)
from scoutless.history.synthetic import generate_chunk, generate_history, iter_chunks, read_truth
from scoutless.targets.bins import load_bins


@pytest.fixture(scope="module")
def frames():
    return generate_chunk(1500, seed=3)


def test_tables_have_every_schema_column(frames) -> None:
    assert set(TASK_COLUMNS) <= set(frames.tasks.columns)
    assert set(JOB_COLUMNS) <= set(frames.jobs.columns)
    assert set(DATASET_COLUMNS) <= set(frames.datasets.columns)
    assert frames.jobs["pandaid"].is_unique
    assert frames.datasets["datasetid"].is_unique


def test_task_names_and_vocabulary_look_like_atlas(frames) -> None:
    tasks = frames.tasks
    projects = tasks["taskname"].str.split(".").str[0]
    assert projects.eq("user").any() and projects.str.startswith("mc").any()
    assert projects.str.startswith("data").any()
    assert tasks.loc[tasks.prodsourcelabel == "user", "taskname"].str.startswith("user.").all()
    for name in ("Sim_tf.py", "Reco_tf.py", "Derivation_tf.py", "Gen_tf.py"):
        assert tasks["transpath"].eq(name).any(), name
    assert tasks["processingtype"].str.startswith("panda-client").any()
    assert tasks["transuses"].dropna().str.match(r"Atlas-\d+\.\d+").all()
    assert set(tasks["corecount"].unique()) >= {1, 8}
    # analysis users are Zipf-active: the busiest user owns many tasks, most own few
    per_user = tasks.loc[tasks.prodsourcelabel == "user", "username"].value_counts()
    assert per_user.iloc[0] >= 5 * per_user.median()


def test_jobs_scouts_failures_and_times(frames) -> None:
    jobs, tasks = frames.jobs, frames.tasks.set_index("jeditaskid")
    per_task = jobs.groupby("jeditaskid").size()
    assert 20 <= per_task.mean() <= 40 and per_task.max() > 1000
    failed = jobs["jobstatus"].eq("failed").mean()
    assert 0.03 <= failed <= 0.10
    scouts = jobs[jobs["specialhandling"].eq("sj")]
    assert scouts[scouts["jobstatus"].eq("finished")].groupby("jeditaskid").size().max() == 10
    # scouts are the lowest pandaids and the earliest starts of their task
    first = jobs.sort_values("pandaid").groupby("jeditaskid").head(10)
    assert first["specialhandling"].eq("sj").all()
    last_scout_start = scouts.groupby("jeditaskid")["starttime"].max()
    others = jobs[~jobs["specialhandling"].eq("sj")]
    assert (
        others["starttime"].to_numpy() >= last_scout_start.loc[others.jeditaskid].to_numpy()
    ).all()
    assert (
        jobs["starttime"].to_numpy() > tasks.loc[jobs.jeditaskid, "creationdate"].to_numpy()
    ).all()
    assert (jobs["endtime"] > jobs["starttime"]).all()
    assert (jobs.loc[jobs.jobstatus == "failed", "nevents"] == 0).all()
    assert (jobs["hs06"] > 0).all() and (jobs["maxrss"] >= jobs["maxpss"]).all()


def test_taskparams_are_panda_json_and_give_the_same_features(frames) -> None:
    params = json.loads(frames.taskparams["taskparams"].iloc[0])
    for key in ("taskName", "userName", "prodSourceLabel", "transPath", "coreCount", "log"):
        assert key in params
    features = features_of(frames)
    assert list(features.columns) == FEATURE_NAMES
    # every task has input counts; production tasks carry nEventsPerJob or nFilesPerJob
    assert features["input_nfiles"].notna().all() and (features["n_input_datasets"] >= 1).all()
    assert (features["nevents_per_job"].notna() | features["nfiles_per_job"].notna()).all()
    assert features["requested_ramcount"].notna().mean() > 0.5


def test_targets_spread_over_the_default_bins(frames) -> None:
    values = targets_of(frames)
    for target, bins in load_bins().items():
        classes = bins.classify(values[target].to_numpy())
        share = np.bincount(classes[classes >= 0], minlength=bins.n_classes) / len(classes)
        assert share.min() >= 0.015, (target, share)  # >= 3% on large runs; noise at 1.5k
        assert share.max() <= 0.6, (target, share)


def test_deterministic_for_a_seed_and_across_chunk_sizes() -> None:
    a = generate_chunk(2100, seed=5)
    b = pd.concat([f.jobs for f in iter_chunks(2100, seed=5, chunk_tasks=1000)], ignore_index=True)
    pd.testing.assert_frame_equal(a.jobs, b)
    c = generate_chunk(2100, seed=6)
    assert not a.jobs["maxpss"].equals(c.jobs["maxpss"])


def test_sqlite_round_trip_through_the_readers(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'h.sqlite'}")
    stats = generate_history(engine, 1200, seed=9, chunk_tasks=1000, progress=False)
    history = read_history(engine)
    assert stats.n_tasks == 1200 == len(history.tasks)
    assert stats.n_jobs == len(history.jobs) and stats.rows_per_s > 0
    expected = generate_chunk(1200, seed=9)
    got = history.jobs.sort_values("pandaid").reset_index(drop=True)
    assert pd.api.types.is_datetime64_any_dtype(pd.to_datetime(got["starttime"]))
    assert (pd.to_datetime(got["starttime"]) == expected.jobs["starttime"]).all()
    assert (pd.to_datetime(history.tasks["creationdate"]) == expected.tasks["creationdate"]).all()
    truth = read_truth(engine)
    assert truth is not None and len(truth) == 1200
    assert read_truth(engine, ids=[1, 2]).index.tolist() == [1, 2]
    assert (got["maxpss"].to_numpy() == expected.jobs["maxpss"].to_numpy()).all()


def test_read_truth_is_none_without_the_table(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'empty.sqlite'}")
    assert read_truth(engine) is None


def test_creation_dates_span_the_period_in_task_order() -> None:
    frames = generate_chunk(1000, seed=2, start=datetime(2023, 1, 1), days=30)
    created = frames.tasks["creationdate"]
    assert created.is_monotonic_increasing
    assert created.min() >= pd.Timestamp("2023-01-01") and created.max() < pd.Timestamp(
        "2023-01-31"
    )


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="scenario"):
        generate_chunk(10, scenario="nope")
    with pytest.raises(ValueError, match="n_tasks"):
        generate_chunk(0)
