"""The service reads a task's history from the store in the task's own query, computes the
features training computed (parity), and flags tasks whose keys have no history."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from service_fakes import task
from sqlalchemy import inspect, select
from sqlalchemy.exc import OperationalError

from scoutless.bundle import load_bundle
from scoutless.config import HistorySettings, Settings
from scoutless.features.extract import (
    FEATURE_NAMES,
    TASKPARAM_TO_COLUMN,
    features_of,
    input_counts,
)
from scoutless.features.history import layout_of
from scoutless.history import task_reader
from scoutless.history.build import build_training_table, task_history_frame
from scoutless.history.db_write import write_frame
from scoutless.history.panda_db import make_engine, read_history
from scoutless.history.store import (
    HISTORY_MISSING,
    LEGACY_TABLE,
    key_states,
    read_states,
    update_store,
)
from scoutless.history.store_reader import SUBMITTED, task_history
from scoutless.history.task_reader import TASK_HISTORY_KEYS, TaskReader
from scoutless.service.app import create_app
from scoutless.targets.estimators import compute_task_targets
from scoutless.targets.spec import TARGET_NAMES
from scoutless.training import train_bundle

_spec = importlib.util.spec_from_file_location(
    "panda_history", Path(__file__).parents[1] / "history" / "panda_history.py"
)
panda_history = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(panda_history)  # type: ignore[union-attr]
_legacy_spec = importlib.util.spec_from_file_location(
    "legacy_store", Path(__file__).parents[1] / "history" / "legacy_store.py"
)
legacy_store = importlib.util.module_from_spec(_legacy_spec)
_legacy_spec.loader.exec_module(legacy_store)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A PanDA history, its training table with history, a bundle, and a store that knows
    every task finished before the latest one."""
    tmp = tmp_path_factory.mktemp("history_service")
    url = f"sqlite:///{tmp / 'panda.sqlite'}"
    engine = make_engine(url)
    panda_history.load_into(engine, panda_history.make_history_frames())
    history = read_history(engine)
    table, _ = build_training_table(history, with_history=True, settings=Settings())
    bundle = train_bundle(table, tmp / "bundle", models=("xgb",), progress=False, n_jobs=1, settings=Settings())
    latest = table.frame.sort_values("creationdate").iloc[-1]
    values = compute_task_targets(history.jobs, history.tasks, settings=Settings())
    done = task_history_frame(history.tasks, history.jobs, values)
    done = done[done["finished_at"] < latest["creationdate"]]
    update_store(engine, done, TASK_HISTORY_KEYS, list(TARGET_NAMES), HistorySettings())
    new_task = history.tasks.iloc[[0]].assign(
        jeditaskid=99999, username="nobody", transpath="New_tf.py", campaign="MC99"
    )
    write_frame(engine, "jedi_tasks", new_task)
    engine.dispose()
    return url, table, bundle, int(latest["jeditaskid"])


def test_service_history_features_equal_training_features(world):
    url, table, _, latest = world
    layout = layout_of(table.feature_names, list(table.bins))
    assert layout is not None and set(layout.kinds) == {"user", "app", "campaign"}
    reader = TaskReader(make_engine(url))
    assert reader.with_history
    features, found = task_history(
        reader.inputs(latest)[0], layout, TASK_HISTORY_KEYS, HistorySettings()
    )
    row = table.frame.set_index("jeditaskid").loc[latest]
    assert found
    np.testing.assert_allclose(
        [features[n] for n in layout.names], row[layout.names].to_numpy(float),
        rtol=1e-9, equal_nan=True,
    )  # fmt: skip
    reader.engine.dispose()


@pytest.mark.parametrize("with_errors", [True, False])
def test_a_legacy_store_is_migrated_by_the_service_and_read(world, tmp_path, with_errors):
    """A store in the first layout (one row per key and target; the oldest without the
    experts' error columns), not yet migrated by a writer: the first reader moves it into
    the current layout and the task path computes training's features from it (the
    errors unknown, NaN, where the table had none)."""
    url, table, _, latest = world
    copy = tmp_path / "old.sqlite"
    copy.write_bytes(Path(url.removeprefix("sqlite:///")).read_bytes())
    engine = make_engine(f"sqlite:///{copy}")
    with engine.connect() as conn:
        pairs = conn.execute(select(key_states.c.key_kind, key_states.c.key_value)).all()
        states = read_states(conn, pairs)
    key_states.drop(engine)
    legacy_store.write_legacy(engine, states, with_errors=with_errors)
    reader = TaskReader(make_engine(f"sqlite:///{copy}", for_reads=True))
    assert reader.with_history and not inspect(engine).has_table(LEGACY_TABLE)
    layout = layout_of(table.feature_names, list(table.bins))
    features, found = task_history(
        reader.inputs(latest)[0], layout, TASK_HISTORY_KEYS, HistorySettings()
    )
    row = table.frame.set_index("jeditaskid").loc[latest]
    errors = () if with_errors else ("_last2_err", "_request_err")
    kept = [n for n in layout.names if not n.endswith(errors)]
    assert found and (len(kept) == len(layout.names)) == with_errors
    np.testing.assert_allclose([features[n] for n in kept], row[kept].to_numpy(float),
                               rtol=1e-9, equal_nan=True)  # fmt: skip
    assert all(np.isnan(features[n]) for n in layout.names if n not in kept)
    assert reader.states([("user", str(row["username"]))])
    reader.engine.dispose()
    engine.dispose()


def test_users_with_and_without_history_are_answered_and_flagged(world, tmp_path):
    url, _, bundle, latest = world
    log = f"sqlite:///{tmp_path / 'log.sqlite'}"
    app = create_app(predictor=load_bundle(bundle), db_url=url, log_db_url=log)
    with TestClient(app, client=("127.0.0.1", 50000), base_url="http://127.0.0.1") as client:
        known = client.get(f"/v1/tasks/{latest}/prediction")
        new = client.get("/v1/tasks/99999/prediction")
        posted = client.post("/v1/predict", json={"task": task(username="alice")})
    assert known.status_code == 200 and new.status_code == 200, new.text
    kinds = [[f["kind"] for f in r.json()["tasks"][0]["flags"]] for r in (known, new)]
    assert HISTORY_MISSING not in kinds[0] and HISTORY_MISSING in kinds[1]
    assert set(new.json()["tasks"][0]["targets"]) == set(TARGET_NAMES)
    # a client that posts the task's features without history gets an answer, flagged
    assert posted.status_code == 200, posted.text
    assert HISTORY_MISSING in [f["kind"] for f in posted.json()["tasks"][0]["flags"]]


# -- posted tasks get their history from the store too ---------------------------------------


@pytest.fixture(scope="module")
def served(world, tmp_path_factory):
    """A client of the world's service (bundle with history, database with the store) and
    the prediction log's file."""
    url, _, bundle, _ = world
    log_file = tmp_path_factory.mktemp("history_log") / "log.sqlite"
    app = create_app(predictor=load_bundle(bundle), db_url=url, log_db_url=f"sqlite:///{log_file}")
    with TestClient(app, client=("127.0.0.1", 50000), base_url="http://127.0.0.1") as client:
        yield client, log_file


def _posted(url: str, task_id: int) -> tuple[dict, dict]:
    """The task's features (no history features) and its task parameters as JEDI would post
    them, both with the task's creation time (the history's submit time)."""
    reader = TaskReader(make_engine(url))
    task, params, datasets = reader.inputs(task_id)
    created = str(task[SUBMITTED])
    features = {k: None if v != v else v for k, v in features_of(task, params, datasets).items()}
    counts = {k: v for k, v in input_counts(datasets).items() if v == v}
    taskparams = {
        **params,
        **{key: task[column] for key, column in TASKPARAM_TO_COLUMN.items() if column in task},
        "taskName": task["taskname"],
        **counts,
        "creationdate": created,
    }
    reader.engine.dispose()
    return {**features, "creationdate": created}, taskparams


def _logged_features(log_file: Path, request_id: str) -> list[dict]:
    with sqlite3.connect(log_file) as conn:
        rows = conn.execute(
            "SELECT features FROM scoutless_task_predictions"
            " WHERE request_id = ? AND features IS NOT NULL ORDER BY id",
            (request_id,),
        ).fetchall()
    return [json.loads(text) for (text,) in rows]


def _flags(response) -> list[list[str]]:  # type: ignore[no-untyped-def]
    return [[f["kind"] for f in t["flags"]] for t in response.json()["tasks"]]


def _probabilities(response) -> list[dict[str, list[float]]]:  # type: ignore[no-untyped-def]
    return [
        {t: p["probabilities"] for t, p in task["targets"].items()}
        for task in response.json()["tasks"]
    ]


def test_posted_task_gets_the_history_the_task_path_reads(world, served):
    url, table, _, latest = world
    client, log_file = served
    layout = layout_of(table.feature_names, list(table.bins))
    features, taskparams = _posted(url, latest)
    by_id = client.get(f"/v1/tasks/{latest}/prediction")
    by_features = client.post("/v1/predict", json={"task": features})
    by_params = client.post("/v1/predict", json={"taskparams": [taskparams]})
    answers = (by_id, by_features, by_params)
    assert all(r.status_code == 200 for r in answers), [r.text for r in answers]
    assert all(HISTORY_MISSING not in _flags(r)[0] for r in answers)
    logged = [_logged_features(log_file, r.json()["request_id"])[0] for r in answers]
    expected = table.frame.set_index("jeditaskid").loc[latest, layout.names].to_numpy(float)
    for row in logged:  # training's values, whichever way the task came
        got = np.array([np.nan if row[n] is None else row[n] for n in layout.names], float)
        np.testing.assert_allclose(got, expected, rtol=1e-9, equal_nan=True)
    assert _probabilities(by_features) == _probabilities(by_id) == _probabilities(by_params)


def test_posted_task_without_history_is_flagged(served):
    client, _ = served
    new = task(username="nobody", transpath="New_tf.py", campaign="MC99")
    response = client.post("/v1/predict", json={"task": new})
    assert response.status_code == 200, response.text
    assert HISTORY_MISSING in _flags(response)[0]


def test_a_batch_reads_the_store_once(world, served, monkeypatch):
    url, _, _, latest = world
    client, _ = served
    reads: list[set] = []

    def counted(conn, pairs):  # type: ignore[no-untyped-def]
        reads.append(set(pairs))
        return read_states(conn, pairs)

    monkeypatch.setattr(task_reader, "read_states", counted)
    features, _ = _posted(url, latest)
    new = task(username="nobody", transpath="New_tf.py", campaign="MC99")
    batch = [features] * 6 + [new] * 6
    response = client.post("/v1/predict", json={"tasks": batch})
    assert response.status_code == 200, response.text
    assert len(reads) == 1 and len(reads[0]) == 6  # distinct (kind, key) pairs of two tasks
    flags = _flags(response)
    assert all(HISTORY_MISSING not in f for f in flags[:6])
    assert all(HISTORY_MISSING in f for f in flags[6:])


def test_posted_history_features_win_over_the_store(world, served):
    url, _, _, latest = world
    client, log_file = served
    features, _ = _posted(url, latest)
    by_store = client.post("/v1/predict", json={"task": features})
    mine = client.post("/v1/predict", json={"task": {**features, "user_n_finished": 1234.0}})
    assert by_store.status_code == mine.status_code == 200, mine.text
    stored, posted = (
        _logged_features(log_file, r.json()["request_id"])[0] for r in (by_store, mine)
    )
    assert posted["user_n_finished"] == 1234.0 != stored["user_n_finished"]
    assert {k: v for k, v in posted.items() if k != "user_n_finished"} == {
        k: v for k, v in stored.items() if k != "user_n_finished"
    }


def test_unreadable_store_still_answers_flagged(world, served, monkeypatch):
    url, _, _, latest = world
    client, _ = served

    def down(conn, pairs):  # type: ignore[no-untyped-def]
        raise OperationalError("SELECT …", {}, Exception("database is locked"))

    monkeypatch.setattr(task_reader, "read_states", down)
    features, taskparams = _posted(url, latest)
    for body in ({"task": features}, {"taskparams": [taskparams]}):
        response = client.post("/v1/predict", json=body)
        assert response.status_code == 200, response.text
        (flag,) = [f for f in response.json()["tasks"][0]["flags"] if f["kind"] == HISTORY_MISSING]
        assert "unreadable" in flag["msg"] and "error id" in flag["msg"]
        assert "database is locked" not in flag["msg"]  # the driver's words: the log only


def test_history_keys_are_features_of_the_same_name():
    """Posted records carry the store's keys under their jedi_tasks column names."""
    assert set(TASK_HISTORY_KEYS.values()) <= set(FEATURE_NAMES)


def test_a_posted_creation_time_that_is_no_time_is_refused(served):
    client, _ = served
    response = client.post("/v1/predict", json={"task": {**task(), "creationdate": "soon"}})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "tasks", 0, "creationdate"]


def test_listener_predicts_with_the_store_history_too(world, tmp_path):
    """The PanDA listener reads a batch of tasks by id and fills their history features from
    the store, with the values training computed."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    from scoutless.config import ListenerSettings
    from scoutless.panda.listener import TaskListener
    from scoutless.panda.prediction import Batch
    from scoutless.service.pipeline import Pipeline

    url, table, bundle, latest = world
    copy = tmp_path / "panda.sqlite"
    shutil.copy(url.removeprefix("sqlite:///"), copy)  # the listener adds its own tables
    engine = make_engine(f"sqlite:///{copy}")
    with ThreadPoolExecutor(2) as pool:
        pipeline = Pipeline(load_bundle(bundle), None, pool, settings=Settings())
        listener = TaskListener(pipeline, engine, None, ListenerSettings())  # type: ignore[arg-type]
        messages = listener.predictor.predict([latest, 99999], Batch())
    assert set(messages) == {latest, 99999}
    with sqlite3.connect(copy) as conn:
        logged = dict(conn.execute(
            "SELECT jeditaskid, features FROM scoutless_task_predictions WHERE features IS NOT NULL"
        ).fetchall())  # fmt: skip
    layout = layout_of(table.feature_names, list(table.bins))
    assert layout is not None
    served = json.loads(logged[latest])
    row = table.frame.set_index("jeditaskid").loc[latest]
    np.testing.assert_allclose(
        [np.nan if served[n] is None else served[n] for n in layout.names],
        row[layout.names].to_numpy(float), rtol=1e-9, equal_nan=True,
    )  # fmt: skip
    engine.dispose()
