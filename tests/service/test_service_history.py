"""The service reads a task's history from the store in the task's own query, computes the
features training computed (parity), and flags tasks whose keys have no history."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from service_fakes import task

from scoutless.bundle import load_bundle
from scoutless.features.history import layout_of
from scoutless.history.build import build_training_table, task_history_frame
from scoutless.history.panda_db import make_engine, read_history, write_frame
from scoutless.history.store import HISTORY_MISSING, task_history, update_store
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


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A PanDA history, its training table with history, a bundle, and a store that knows
    every task finished before the latest one."""
    tmp = tmp_path_factory.mktemp("history_service")
    url = f"sqlite:///{tmp / 'panda.sqlite'}"
    engine = make_engine(url)
    panda_history.load_into(engine, panda_history.make_history_frames())
    history = read_history(engine)
    table, _ = build_training_table(history, with_history=True)
    bundle = train_bundle(table, tmp / "bundle", models=("xgb",), progress=False, n_jobs=1)
    latest = table.frame.sort_values("creationdate").iloc[-1]
    values = compute_task_targets(history.jobs, history.tasks)
    done = task_history_frame(history.tasks, history.jobs, values)
    done = done[done["finished_at"] < latest["creationdate"]]
    update_store(engine, done, TASK_HISTORY_KEYS, list(TARGET_NAMES))
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
    features, found = task_history(reader.inputs(latest)[0], layout, TASK_HISTORY_KEYS)
    row = table.frame.set_index("jeditaskid").loc[latest]
    assert found
    np.testing.assert_allclose(
        [features[n] for n in layout.names], row[layout.names].to_numpy(float),
        rtol=1e-9, equal_nan=True,
    )  # fmt: skip
    reader.engine.dispose()


def test_users_with_and_without_history_are_answered_and_flagged(world, tmp_path):
    url, _, bundle, latest = world
    log = f"sqlite:///{tmp_path / 'log.sqlite'}"
    app = create_app(predictor=load_bundle(bundle), db_url=url, log_db_url=log)
    with TestClient(app) as client:
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
