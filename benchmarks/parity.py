"""One decision everywhere: for a demo's test tasks, the allocation the service answers (by
id and posted as task parameters), the one ``taskparams`` writes, the one the listener
publishes and the one the replay's ``predicted`` strategy allocates, compared value for
value under the cost policy, with the default settings (the rooms at the loads the
demo's bundle learnt, room_loads.json) and with a settings file that prices each resource
type (``allocation.resource_prices``), caps each target's kills and sets the rooms' loads
(``allocation.room_loads``).

    python benchmarks/parity.py --workdir W --tasks 1000 --out results/parity.json
                                                   # W: a `scoutless demo` folder

Prints JSON: per settings, the tasks compared and the mismatches of each source against
the service's answer by id (memory and cputime values, and the listener's ramCount and
cpuTime against those the answer by id gives).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from record import add_out, emit, reference_loop_s
from scoutless.config import ListenerSettings, Settings
from scoutless.config.settings import CONFIG_ENV

POLICY = "cost"
#: the allocated targets compared
COMPARED = ("memory", "cputime")
#: the message keys the listener's allocation is compared on
MESSAGE_KEYS = ("ramCount", "ramUnit", "cpuTime", "cpuTimeUnit")
#: a settings file: every resource type priced apart, a kill cap per target
PRICED_TOML = """
[allocation]
kill_probability_by_target = { memory = 0.1, cputime = 0.15 }
room_loads = { single = { himem = 0.7, long_queue = 0.6 }, multi = { himem = 0.5 } }

[allocation.resource_prices.SCORE]
memory_gb_hour = 2.0
[allocation.resource_prices.MCORE]
memory_gb_hour = 5.0
memory_overuse_gb_hour = 10.0
[allocation.resource_prices.SCORE_HIMEM]
himem_core_hour = 2.0
[allocation.resource_prices.MCORE_HIMEM]
himem_core_hour = 2.0
"""


@contextmanager
def _config(path: Path) -> Iterator[None]:
    before = os.environ.get(CONFIG_ENV)
    os.environ[CONFIG_ENV] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CONFIG_ENV)
        else:
            os.environ[CONFIG_ENV] = before


def settings_from_file(text: str, folder: Path) -> Settings:
    """The settings a process started with ``--config FILE`` (``text`` in it) reads."""
    path = folder / "scoutless.toml"
    path.write_text(text)
    with _config(path):
        return Settings()


def test_tasks(workdir: Path, n: int | None = None) -> list[int]:
    """The first ``n`` test tasks of the demo's table (tasks the bundle never trained on)."""
    table = pd.read_parquet(workdir / "table.parquet", columns=["jeditaskid", "split_random"])
    ids = sorted(table.loc[table["split_random"] == "test", "jeditaskid"].astype(int).tolist())
    return ids[:n] if n else ids


def posted_params(workdir: Path, ids: list[int]) -> dict[int, dict[str, Any]]:
    """Each task's stored parameters with the input counts JEDI adds (as a submitter posts)."""
    counts = ["n_input_datasets", "input_nfiles", "input_nevents"]
    table = pd.read_parquet(workdir / "table.parquet", columns=["jeditaskid", *counts])
    frame = table.set_index("jeditaskid")
    with sqlite3.connect(workdir / "history.sqlite") as con:
        stored = dict(con.execute("SELECT jeditaskid, taskparams FROM jedi_taskparams"))
    return {
        i: json.loads(stored[i]) | {k: float(v) for k, v in frame.loc[i, counts].items() if v == v}
        for i in ids
    }


def _values(targets: dict[str, Any]) -> tuple[float, ...]:
    return tuple(float(targets[t]["recommended_value"]) for t in COMPARED)


def served(workdir: Path, settings: Settings, params: dict[int, dict]) -> dict[str, dict]:
    """The service's answers by id (the whole targets) and posted (the compared values)."""
    from fastapi.testclient import TestClient

    from scoutless.service.app import create_app

    db_url = f"sqlite:///{workdir / 'history.sqlite'}"
    app = create_app(workdir / "bundle", db_url=db_url, settings=settings, log_predictions=False)
    by_id, posted = {}, {}
    with TestClient(app, client=("127.0.0.1", 50000), base_url="http://127.0.0.1") as client:
        room_loads = client.get("/v1/model").json()["room_loads"]
        for task_id, posted_task in params.items():
            r = client.get(f"/v1/tasks/{task_id}/prediction", params={"policy": POLICY})
            by_id[task_id] = r.json()["tasks"][0]["targets"]
            r = client.post("/v1/predict", json={"taskparams": [posted_task], "policy": POLICY})
            posted[task_id] = _values(r.json()["tasks"][0]["targets"])
    return {"by_id": by_id, "posted": posted, "room_loads": room_loads}


def written(workdir: Path, settings: Settings, params: dict[int, dict]) -> dict[int, tuple]:
    """What ``taskparams --bundle`` fills in, per task."""
    from scoutless.cli.panda import _pipeline, predict_with

    with ThreadPoolExecutor(4) as executor:
        pipeline = _pipeline(workdir / "bundle", executor, settings)
        alpha = settings.listener.alpha
        return {i: _values(predict_with(pipeline, p, POLICY, alpha)[0]["targets"])
                for i, p in params.items()}  # fmt: skip


def published(workdir: Path, settings: Settings, ids: list[int], scratch: Path) -> dict[int, dict]:
    """The listener's scout_prediction per task (on a copy of the history: it writes its
    outbox and rollout tables there)."""
    from scoutless.bundle import load_bundle
    from scoutless.history.panda_db import make_engine
    from scoutless.panda.outbox import create_outbox
    from scoutless.panda.prediction import Batch, TaskPredictor
    from scoutless.panda.telemetry import ListenerMetrics
    from scoutless.service.pipeline import Pipeline

    copy = scratch / "listener-history.sqlite"
    shutil.copyfile(workdir / "history.sqlite", copy)
    engine = make_engine(f"sqlite:///{copy}")
    create_outbox(engine)  # as the listener does when it starts
    try:
        with ThreadPoolExecutor(2) as pool:
            pipeline = Pipeline(load_bundle(workdir / "bundle"), None, pool, settings=settings)
            listener = ListenerSettings(policy=POLICY)
            predictor = TaskPredictor(pipeline, engine, listener, ListenerMetrics())
            messages = predictor.predict(list(ids), Batch())
    finally:
        engine.dispose()
    return {i: {k: json.loads(m)[k] for k in MESSAGE_KEYS} for i, m in messages.items()}


def replayed(workdir: Path, settings: Settings, ids: list[int]) -> dict[int, tuple]:
    """The replay's ``predicted`` allocation (ramCount, cpuTime) per task it replays."""
    from scoutless.bundle import load_bundle
    from scoutless.replay.history import workload_from_db
    from scoutless.replay.submission import model_submission

    db_url = f"sqlite:///{workdir / 'history.sqlite'}"
    work, features = workload_from_db(db_url, settings, only=np.asarray(ids))
    sub = model_submission(load_bundle(workdir / "bundle"), features, work, settings,
                           policy=POLICY, alpha=settings.replay.alpha or 0.05)  # fmt: skip
    return {
        int(t): (float(m), float(c))
        for t, m, c in zip(work.task_ids, sub.ram, sub.cputime, strict=True)
    }


def expected_message(task_id: int, targets: dict[str, Any]) -> dict[str, Any]:
    """The message keys the listener would publish for the answer ``targets``."""
    from scoutless.jedi.messages import build_prediction

    message = build_prediction(task_id, "v", targets, policy=POLICY, skip_policies=(),
                               timestamp=0.0).to_dict()  # fmt: skip
    return {k: message[k] for k in MESSAGE_KEYS}


def compare(workdir: Path, settings: Settings, ids: list[int], scratch: Path) -> dict[str, Any]:
    """Per source, the tasks whose allocation differs from the service's answer by id."""
    params = posted_params(workdir, ids)
    service = served(workdir, settings, params)
    by_id = {i: _values(t) for i, t in service["by_id"].items()}
    sources = {
        "posted": service["posted"],
        "taskparams": written(workdir, settings, params),
        "replay_predicted": replayed(workdir, settings, ids),
    }
    out: dict[str, Any] = {"tasks": len(ids), "answers": by_id,
                           "room_loads": service["room_loads"]}  # fmt: skip
    for name, answers in sources.items():
        out[name] = {"compared": len(answers),
                     "mismatches": sorted(i for i, v in answers.items() if by_id[i] != v)}  # fmt: skip
    messages = published(workdir, settings, ids, scratch)
    out["listener"] = {
        "compared": len(messages),
        "mismatches": sorted(i for i, m in messages.items()
                             if m != expected_message(i, service["by_id"][i])),
    }  # fmt: skip
    return out


def parity(workdir: Path, n: int | None = None) -> dict[str, Any]:
    """:func:`compare` under the default settings and under :data:`PRICED_TOML`."""
    ids = test_tasks(workdir, n)
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        return {
            "default": compare(workdir, Settings(), ids, scratch),
            "priced": compare(workdir, settings_from_file(PRICED_TOML, scratch), ids, scratch),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True, help="a `scoutless demo` folder")
    parser.add_argument("--tasks", type=int, default=1000, help="test tasks compared")
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    result = parity(args.workdir, args.tasks)
    default, priced = result["default"].pop("answers"), result["priced"].pop("answers")
    result["priced"]["answers_that_differ_from_default"] = sum(
        default[i] != priced[i] for i in default
    )
    for outcome in result.values():  # the count, and a few ids to look at
        for source in ("posted", "taskparams", "replay_predicted", "listener"):
            found = outcome[source]["mismatches"]
            outcome[source]["mismatches"], outcome[source]["examples"] = len(found), found[:5]
    emit({"benchmark": "parity", **result}, args.out, loop_before, indent=1)

if __name__ == "__main__":
    main()
