from __future__ import annotations

import pandas as pd
import pytest
from ops_fakes import prediction_rows, small_history
from sqlalchemy import Engine, text

from scoutless.config import Settings
from scoutless.history.db_write import write_frame
from scoutless.history.panda_db import create_schema, make_engine
from scoutless.history.store import read_states
from scoutless.ops.actuals import collect_actuals, join_predictions, read_actuals
from scoutless.ops.prediction_log import PredictionLog
from scoutless.targets.bins import load_bins

SETTINGS = Settings()


@pytest.fixture
def engine(tmp_path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'panda.sqlite'}")
    create_schema(engine)
    # memory classes under the default bins: 0.5 GB → <=1GB, 3 GB → 2-4GB, 6 GB → >4GB
    frames = small_history({1: 0.5, 2: 3.0, 3: 6.0, 4: 3.0}, status={4: "running"})
    for name, frame in frames.items():
        write_frame(engine, name, frame)
    return engine


def test_collect_classifies_finished_tasks_with_serving_bins(engine: Engine) -> None:
    bins = load_bins(targets=["memory", "walltime"])
    PredictionLog(engine).write(prediction_rows([1, 2, 3, 4], [0, 1, 3, 2]))
    result = collect_actuals(engine, bins, settings=SETTINGS)
    assert (result.n_predicted_tasks, result.n_pending, result.n_not_finished) == (4, 4, 1)
    assert result.n_collected == 3
    actuals = read_actuals(engine)
    memory = actuals[actuals["target"] == "memory"].set_index("jeditaskid")
    assert memory["class_id"].to_dict() == {1: 0, 2: 2, 3: 3}
    # P75 x 1.10 of 3 GB per core, in MB (the training target code)
    assert memory.loc[2, "value"] == pytest.approx(3.0 * 1024 * 1.10, rel=1e-3)
    assert set(actuals["target"]) == {"memory", "walltime"}


def test_collect_is_idempotent(engine: Engine) -> None:
    bins = load_bins(targets=["memory"])
    PredictionLog(engine).write(prediction_rows([1, 2, 3], [0, 1, 3]))
    collect_actuals(engine, bins, settings=SETTINGS)
    first = read_actuals(engine).sort_values("jeditaskid").reset_index(drop=True)
    again = collect_actuals(engine, bins, settings=SETTINGS)
    assert again.n_pending == 0 and again.n_collected == 0
    collect_actuals(engine, bins, settings=SETTINGS, recollect=True)
    after = read_actuals(engine).sort_values("jeditaskid").reset_index(drop=True)
    assert len(after) == len(first) == 3
    pd.testing.assert_series_equal(after["class_id"], first["class_id"])


def test_collect_updates_the_history_store_once(engine: Engine) -> None:
    bins = load_bins(targets=["memory"])
    with engine.begin() as conn:
        conn.execute(text("update jedi_tasks set username = 'alice'"))
    PredictionLog(engine).write(prediction_rows([1, 2, 3], [0, 1, 3]))
    collect_actuals(engine, bins, settings=SETTINGS)
    collect_actuals(engine, bins, settings=SETTINGS, recollect=True)  # not counted twice
    with engine.connect() as conn:
        states = read_states(conn, [("user", "alice")])
    activity = sum(s.n for (kind, _, target), s in states.items() if target == "")
    memory = [s for (kind, _, target), s in states.items() if target == "memory"]
    assert activity == 3 and sum(len(s.recent) for s in memory) == 3


def test_join_keeps_latest_prediction_per_task_and_target(engine: Engine) -> None:
    log = PredictionLog(engine)
    log.write(prediction_rows([1, 2], [3, 3], created_at=pd.Timestamp("2026-01-01")))
    log.write(prediction_rows([1], [0], created_at=pd.Timestamp("2026-01-02")))
    collect_actuals(engine, load_bins(targets=["memory"]), settings=SETTINGS)
    joined = join_predictions(log.read(), read_actuals(engine)).set_index("jeditaskid")
    assert joined["class_id"].to_dict() == {1: 0, 2: 3}
    assert joined["actual_class"].to_dict() == {1: 0, 2: 2}
