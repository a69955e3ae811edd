"""Train/serve parity: the model sees the same encoded vector, whichever way a task arrives.

A generated history whose ``workqueue_id`` (an integer column) is NULL for some tasks is
read in chunks as floats; ``data build`` must still give ``"11"``, not ``"11.0"``, or the
service (which reads the task alone, as ints, or gets it posted as taskparams) meets an
unknown category. The service side goes through the real HTTP routes; a recording
predictor captures the arrays its models are given.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from service_fakes import FakePredictor
from sqlalchemy import select, update

from scoutless.config import Settings
from scoutless.features.encoded import EncodedFeatures
from scoutless.features.encoders import FeatureEncoder
from scoutless.history.build import build_table_from_db
from scoutless.history.panda_db import make_engine
from scoutless.history.schema import jedi_taskparams, jedi_tasks
from scoutless.history.synthetic import generate_history
from scoutless.history.table import TrainingTable
from scoutless.service.app import create_app

N_TASKS = 450
N_CHECKED = 300


class RecordingPredictor(FakePredictor):
    """Fake models on a real encoder; remembers what the memory model was given."""

    def __init__(self, encoder: FeatureEncoder) -> None:
        super().__init__()
        self.encoder = encoder
        self.seen: list[EncodedFeatures] = []

    def predict_encoded(self, encoded: EncodedFeatures, target: str) -> np.ndarray:
        if target == "memory":
            self.seen.append(encoded)
        return super().predict_encoded(encoded, target)


def _null_workqueue(engine, every: int = 3) -> None:  # type: ignore[no-untyped-def]
    """NULL ``workqueue_id`` of every ``every``-th task, and drop it from its parameters."""
    hit = jedi_tasks.c.jeditaskid % every == 0
    with engine.begin() as conn:
        conn.execute(update(jedi_tasks).where(hit).values(workqueue_id=None))
        p = jedi_taskparams
        for task_id, text in conn.execute(select(p.c.jeditaskid, p.c.taskparams)).all():
            if task_id % every == 0:
                params = json.loads(text)
                params.pop("workQueueID", None)
                conn.execute(
                    update(p).where(p.c.jeditaskid == task_id).values(taskparams=json.dumps(params))
                )


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> tuple[str, TrainingTable]:
    folder: Path = tmp_path_factory.mktemp("parity")
    url = f"sqlite:///{folder / 'history.sqlite'}"
    engine = make_engine(url)
    generate_history(engine, N_TASKS, seed=13, progress=False)
    _null_workqueue(engine)
    table, _ = build_table_from_db(engine, chunk_tasks=100, settings=Settings())  # chunks read NULL ints as floats
    engine.dispose()
    path = table.save(folder / "table.parquet")  # what `data build` writes, train reads
    return url, TrainingTable.load(path)


def _stored_params(url: str, ids: list[int]) -> dict[int, dict]:
    engine = make_engine(url)
    p = jedi_taskparams
    with engine.connect() as conn:
        rows = conn.execute(select(p.c.jeditaskid, p.c.taskparams).where(p.c.jeditaskid.in_(ids)))
        out = {int(i): json.loads(text) for i, text in rows}
    engine.dispose()
    return out


def _assert_same_bits(a: EncodedFeatures, b: EncodedFeatures, where: str) -> None:
    np.testing.assert_array_equal(a.codes, b.codes, err_msg=f"{where}: categorical codes")
    assert a.numeric.dtype == b.numeric.dtype == np.float32
    same_nan = np.isnan(a.numeric) == np.isnan(b.numeric)
    assert same_nan.all(), f"{where}: missing numbers differ"
    finite = ~np.isnan(a.numeric)
    assert (a.numeric[finite].view(np.uint32) == b.numeric[finite].view(np.uint32)).all(), where


def test_training_db_and_taskparams_give_the_same_encoded_vector(history, tmp_path) -> None:
    url, table = history
    frame = table.frame.set_index("jeditaskid")
    assert frame["workqueue_id"].isna().any() and frame["workqueue_id"].notna().any()
    assert not frame["workqueue_id"].dropna().str.endswith(".0").any()
    encoder = FeatureEncoder(table.features).fit(table.X())
    rng = np.random.default_rng(0)
    ids = sorted(int(i) for i in rng.choice(frame.index, size=N_CHECKED, replace=False))
    trained = encoder.transform(table.X(frame.loc[ids]))  # as train_bundle encodes
    params = _stored_params(url, ids)
    predictor = RecordingPredictor(encoder)
    log_url = f"sqlite:///{tmp_path / 'log.sqlite'}"
    app = create_app(predictor=predictor, db_url=url, log_db_url=log_url, log_predictions=False)
    with TestClient(app, client=("127.0.0.1", 50000), base_url="http://127.0.0.1") as client:
        for row, task_id in enumerate(ids):
            counts = frame.loc[task_id, ["n_input_datasets", "input_nfiles", "input_nevents"]]
            posted = params[task_id] | {k: float(v) for k, v in counts.items() if v == v}
            by_id = client.get(f"/v1/tasks/{task_id}/prediction")
            text = json.dumps(posted)  # as stored: may hold NaN, which only text carries
            by_params = client.post("/v1/predict", json={"taskparams": [text]})
            assert by_id.status_code == by_params.status_code == 200, by_id.text + by_params.text
            expected = trained.take(np.array([row]))
            _assert_same_bits(expected, predictor.seen[-2], f"task {task_id} by id")
            _assert_same_bits(expected, predictor.seen[-1], f"task {task_id} by taskparams")
    assert len(predictor.seen) == 2 * N_CHECKED
