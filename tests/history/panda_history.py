"""A small hand-made PanDA history (no generator), for testing the reader and the build."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

T0 = pd.Timestamp("2024-01-01 00:00:00")


def make_history_frames(n_tasks: int = 40, jobs_per_task: int = 15, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    ptypes = np.array(["simul", "reco", "deriv", "evgen"])
    tasks, params, datasets, jobs = [], [], [], []
    pandaid = 1000
    for i in range(n_tasks):
        tid = 5000 + i
        ptype = ptypes[i % len(ptypes)]
        cores = int(rng.choice([1, 8]))
        created = T0 + pd.Timedelta(hours=6 * i)
        tasks.append(
            {
                "jeditaskid": tid, "taskname": f"mc16_13TeV.{300000 + i}.x.{ptype}.e1_s2",
                "username": f"user{i % 5}", "prodsourcelabel": "managed", "tasktype": "prod",
                "processingtype": ptype, "transpath": f"{ptype.title()}_tf.py",
                "transuses": "Atlas-21.0.77", "transhome": "AthSimulation-21.0.77",
                "architecture": "x86_64-centos7-gcc8-opt", "corecount": cores,
                "campaign": "MC16a", "workqueue_id": 3, "gshare": "MC 16",
                "baseramcount": 0, "basewalltime": 600, "cpuefficiency": 90,
                "status": "done", "creationdate": created, "modificationtime": created,
                "ramcount": 9999,
            }
        )  # fmt: skip
        params.append(
            {"jeditaskid": tid, "taskparams": json.dumps({"taskName": "x", "nEventsPerJob": 100})}
        )
        datasets.append(
            {"jeditaskid": tid, "datasetid": tid * 10, "datasetname": f"in.{tid}",
             "type": "input", "masterid": None, "nfiles": 10 + i, "nevents": 1000 * (i + 1),
             "creationtime": created, "modificationtime": created}
        )  # fmt: skip
        need_gb = {"simul": 1.5, "reco": 3.0, "deriv": 1.0, "evgen": 0.6}[ptype]
        for j in range(jobs_per_task):
            wall = float(rng.uniform(3000, 9000))
            start = created + pd.Timedelta(minutes=30 + 5 * j)
            jobs.append(
                {
                    "pandaid": pandaid, "jeditaskid": tid, "jobstatus": "finished",
                    "modificationtime": start + pd.Timedelta(seconds=wall),
                    "specialhandling": "sj" if j < 10 else None, "attemptnr": 1,
                    "corecount": cores, "actualcorecount": cores,
                    "maxpss": int(need_gb * cores * 1024 * 1024 * rng.uniform(0.9, 1.1)),
                    "maxrss": int(need_gb * cores * 1024 * 1024 * 1.2),
                    "cpuconsumptiontime": int(wall * cores * 0.8), "starttime": start,
                    "endtime": start + pd.Timedelta(seconds=wall), "nevents": 100,
                    "inputfilebytes": int(2e9), "outputfilebytes": int(5e8),
                    "totrbytes": int(2e9), "totwbytes": int(5e8),
                    "hs06sec": int(wall * cores * 10), "hs06": 10 * cores,
                    "computingsite": "CERN-PROD", "modificationhost": "wn1",
                }
            )  # fmt: skip
            pandaid += 1
    return {
        "jedi_tasks": pd.DataFrame(tasks),
        "jedi_taskparams": pd.DataFrame(params),
        "jedi_datasets": pd.DataFrame(datasets),
        "jobsarchived4": pd.DataFrame(jobs),
    }


def load_into(engine, frames: dict) -> None:
    from scoutless.history.db_write import write_frame
    from scoutless.history.panda_db import create_schema

    create_schema(engine)
    for name, frame in frames.items():
        write_frame(engine, name, frame)


@pytest.fixture
def history_frames() -> dict:
    return make_history_frames()


@pytest.fixture
def sqlite_engine(tmp_path):
    from scoutless.history.panda_db import make_engine

    engine = make_engine(f"sqlite:///{tmp_path / 'history.sqlite'}")
    yield engine
    engine.dispose()
