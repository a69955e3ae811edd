"""Proof on drift: a stale champion loses accuracy, the monitor alerts, retraining recovers.

A hand-made PanDA history: from ``drift_start`` on, simul and reco tasks run a new release
(transuses Atlas-22) needing about twice the memory. The champion learnt the old release
only. Everything after that is the production code path: features and targets of the
training code, the prediction log, collect, alert rules, retrain on alert, promotion.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from scoutless.bundle import load_bundle
from scoutless.cli.main import app
from scoutless.config import Settings
from scoutless.history.build import build_training_table
from scoutless.history.db_write import write_frame
from scoutless.history.panda_db import create_schema, make_engine, read_history
from scoutless.ops import registry as reg
from scoutless.ops.alerts import AlertConfig, AlertRule
from scoutless.ops.loop import MonitorContext, RetrainOptions, monitor_step
from scoutless.ops.prediction_log import PredictionLog
from scoutless.targets.spec import class_col
from scoutless.training import train_bundle
from spread import MARGIN_SD, binomial_sd, gap_sd

NOW = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
DRIFT_START = NOW - timedelta(days=20)
#: GB per core needed, (old release, new release); the new one moves simul and reco up a class
MEMORY_GB = {"simul": (1.5, 3.0), "reco": (3.0, 5.0), "deriv": (0.6, 0.6), "evgen": (0.5, 0.5)}
WALL_S = {"simul": 8000.0, "reco": 5000.0, "deriv": 2000.0, "evgen": 3000.0}


def drift_history(n_tasks: int, start: datetime, end: datetime, first_id: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    ptypes = list(MEMORY_GB)
    tasks, params, datasets, jobs = [], [], [], []
    created = pd.to_datetime(np.sort(rng.uniform(start.timestamp(), end.timestamp(), n_tasks)),
                             unit="s")  # fmt: skip
    for i in range(n_tasks):
        tid, ptype = first_id + i, ptypes[i % 4]
        new = created[i] >= DRIFT_START and ptype in ("simul", "reco")
        release = "22.0.1" if new else "21.0.77"
        tasks.append({
            "jeditaskid": tid, "taskname": f"mc16_13TeV.{tid}.{ptype}", "username": "prod",
            "prodsourcelabel": "managed", "tasktype": "prod", "processingtype": ptype,
            "transpath": f"{ptype.title()}_tf.py", "transuses": f"Atlas-{release}",
            "transhome": f"Athena-{release}", "architecture": "x86_64-centos7-gcc8-opt",
            "corecount": 1, "campaign": "MC16a", "workqueue_id": 3, "gshare": "MC",
            "baseramcount": 0, "basewalltime": 600, "cpuefficiency": 90, "status": "done",
            "creationdate": created[i], "modificationtime": created[i],
        })  # fmt: skip
        params.append({"jeditaskid": tid, "taskparams": json.dumps({"nEventsPerJob": 100})})
        datasets.append({"jeditaskid": tid, "datasetid": tid, "type": "input", "masterid": None,
                         "nfiles": 10, "nevents": 1000, "datasetname": f"in.{tid}",
                         "creationtime": created[i], "modificationtime": created[i]})  # fmt: skip
        gb = MEMORY_GB[ptype][int(new)]
        for j in range(4):
            begin = created[i] + pd.Timedelta(minutes=30 + j)
            wall = WALL_S[ptype] * rng.uniform(0.95, 1.05)
            jobs.append({
                "pandaid": tid * 10 + j, "jeditaskid": tid, "jobstatus": "finished",
                "modificationtime": begin + pd.Timedelta(seconds=wall), "attemptnr": 1,
                "cpuconsumptiontime": int(wall),
                "corecount": 1, "actualcorecount": 1,
                "maxpss": int(gb * 1024**2 * rng.uniform(0.97, 1.03)), "starttime": begin,
                "endtime": begin + pd.Timedelta(seconds=wall), "nevents": 100,
                "inputfilebytes": int(1e9), "outputfilebytes": int(1e8), "hs06": 10,
            })  # fmt: skip
    return {"jedi_tasks": pd.DataFrame(tasks), "jedi_taskparams": pd.DataFrame(params),
            "jedi_datasets": pd.DataFrame(datasets), "jobsarchived4": pd.DataFrame(jobs)}  # fmt: skip


def _load(engine, frames: dict) -> list[int]:
    for name, frame in frames.items():
        write_frame(engine, name, frame)
    return frames["jedi_tasks"]["jeditaskid"].tolist()


def _memory_accuracy(predictor, engine, ids: list[int]) -> float:
    table, _ = build_training_table(read_history(engine, ids), bins=predictor.bins, settings=Settings())
    proba = predictor.predict_proba(table.X(), targets=["memory"])["memory"]
    return float(np.mean(proba.argmax(axis=1) == table.frame[class_col("memory")].to_numpy()))


def _serve(predictor, engine, ids: list[int]) -> None:
    """What the service does per request: predict from the task's features, log the rows."""
    history = read_history(engine, ids, with_jobs=False)
    features = history.features()
    proba = predictor.predict_proba(features)
    created = history.tasks.set_index("jeditaskid")["creationdate"]
    chosen = {target: p.argmax(axis=1) for target, p in proba.items()}
    rows = []
    for i, tid in enumerate(features.index):
        feats = {k: (None if isinstance(v, float) and np.isnan(v) else v)
                 for k, v in features.loc[tid].items()}  # fmt: skip
        predictions = {
            target: {"class_id": int(chosen[target][i]),
                     "class_label": predictor.bins[target].labels[chosen[target][i]],
                     "recommended_value": None, "probabilities": p[i].tolist()}
            for target, p in proba.items()
        }  # fmt: skip
        rows.append({
            "request_id": f"req-{tid}", "jeditaskid": int(tid),
            "model_version": predictor.version, "policy": "argmax",
            "predictions": predictions, "features": json.dumps(feats),
            "created_at": pd.Timestamp(created[tid]).to_pydatetime(),
        })  # fmt: skip
    PredictionLog(engine).write(rows)


@pytest.mark.slow
def test_release_drift_alert_retrain_recovers(tmp_path: Path, torch_single_thread) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'panda.sqlite'}")
    create_schema(engine)
    old_ids = _load(engine, drift_history(240, NOW - timedelta(days=50), DRIFT_START, 10_000, 1))
    new_ids = _load(engine, drift_history(240, DRIFT_START, NOW, 20_000, 2))

    # the champion knows the old release only
    table, _ = build_training_table(read_history(engine, old_ids), settings=Settings())
    champion_dir = train_bundle(table, tmp_path / "champion", models=("xgb",), progress=False,
                                n_jobs=1, settings=Settings())  # fmt: skip
    registry = tmp_path / "registry"
    reg.promote(registry, reg.register(registry, champion_dir))
    champion = load_bundle(registry)
    before = _memory_accuracy(champion, engine, new_ids)

    _serve(champion, engine, new_ids)
    # 240 tasks in 20 days: the two trailing 10-day windows each count >= 40 of them (the
    # windows' edges move with the day the test runs), so the threshold keeps MARGIN_SD
    # binomial sds of such a window above the stale champion's accuracy
    n_window, threshold = 40, 0.85
    assert threshold - before > MARGIN_SD * binomial_sd(before, n_window), before
    rule = AlertRule(name="memory-accuracy", metric="accuracy", scope="memory", op="<",
                     threshold=threshold, windows=2, min_samples=n_window,
                     retrain=True)  # fmt: skip
    ctx = MonitorContext(
        engine=engine, registry=registry, settings=Settings(),
        config=AlertConfig(rules=[rule], every="10D"),
        retrain=RetrainOptions(history_days=20, margin=0.01, min_tasks=50),
    )  # fmt: skip
    report = monitor_step(ctx)

    assert report.collected.n_collected == len(new_ids)
    assert [a.rule for a in report.alerts] == ["memory-accuracy"]
    result = report.retrained
    assert result is not None and result.promoted, result and result.reason
    new_champion = load_bundle(registry)
    assert new_champion.version == result.challenger != champion.version

    fresh_ids = _load(engine, drift_history(120, DRIFT_START, NOW, 30_000, 3))
    after_fresh = _memory_accuracy(new_champion, engine, fresh_ids)
    before_fresh = _memory_accuracy(champion, engine, fresh_ids)
    print(json.dumps({
        "memory_accuracy_post_drift_old_champion": round(before, 3),
        "holdout_mean_accuracy": {"champion": round(result.champion_score, 3),
                                  "challenger": round(result.challenger_score, 3)},
        "holdout_memory_accuracy": {"champion": result.champion_scores["memory"],
                                    "challenger": result.challenger_scores["memory"]},
        "fresh_post_drift_memory_accuracy": {"old": round(before_fresh, 3),
                                             "new": round(after_fresh, 3)},
    }))  # fmt: skip
    # half the tasks (simul, reco) moved a class: 0.5 against 1.0, far beyond MARGIN_SD
    n_post, n_fresh = len(new_ids), len(fresh_ids)
    assert after_fresh - before_fresh > MARGIN_SD * gap_sd(after_fresh, n_fresh, before_fresh,
                                                           n_fresh)  # fmt: skip
    assert after_fresh > 0.9 - MARGIN_SD * binomial_sd(0.9, n_fresh)
    assert before < 0.7 - MARGIN_SD * binomial_sd(0.7, n_post)

    # the operator's view of the same story, through the CLI
    runner = CliRunner()
    args = ["--registry", str(registry), "--db", str(engine.url)]
    out = runner.invoke(app, ["monitor", "report", *args, "--every", "5D", "--all-versions",
                              "--html", str(tmp_path / "monitor.html")])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "prediction quality per window" in out.output
    assert (tmp_path / "monitor.html").read_text().count("data:image/png") >= 3
    out = runner.invoke(app, ["monitor", "collect", *args])
    assert out.exit_code == 0, out.output


@pytest.mark.slow
def test_generator_release_drift_scenario_recovers(tmp_path: Path, torch_single_thread) -> None:
    """The same loop on the generator's own scenario: a new release for simul/pile/reco/deriv
    shifts memory (x1.75) and CPU (x1.5); the stale champion loses, the retrained one recovers."""
    from scoutless.history.synthetic import generate_history

    engine = make_engine(f"sqlite:///{tmp_path / 'panda.sqlite'}")
    start = NOW - timedelta(days=60)
    kwargs = {"start": start, "days": 60, "scenario": "release_drift", "drift_start": DRIFT_START}
    generate_history(engine, 4000, seed=11, progress=False, **kwargs)
    history = read_history(engine, with_jobs=False)  # the tasks' creation dates only
    created = history.tasks.set_index("jeditaskid")["creationdate"]
    old_ids = created.index[created < DRIFT_START].tolist()
    new_ids = created.index[created >= DRIFT_START].tolist()

    table, _ = build_training_table(read_history(engine, old_ids), settings=Settings())
    champion_dir = train_bundle(table, tmp_path / "champion", models=("xgb",), progress=False,
                                n_jobs=1, settings=Settings())  # fmt: skip
    registry = tmp_path / "registry"
    reg.promote(registry, reg.register(registry, champion_dir))
    champion = load_bundle(registry)
    before = _memory_accuracy(champion, engine, new_ids)
    pre_drift = _memory_accuracy(champion, engine, old_ids[-300:])

    _serve(champion, engine, new_ids)
    # The rule's threshold lies halfway between the stale champion's accuracy before and
    # after the drift. ~60 tasks a day: of the 10-day windows over the 20 days the two
    # trailing ones with >= `n_window` tasks (the windows' edges move with the day the test
    # runs) scatter around `before` by binomial_sd(before, n_window) at most, so the
    # threshold must sit MARGIN_SD of those above `before` (and as far below `pre_drift`).
    n_window = 250
    threshold = (pre_drift + before) / 2
    margin = MARGIN_SD * max(binomial_sd(before, n_window), binomial_sd(pre_drift, n_window))
    assert threshold - before > margin, (before, pre_drift, margin)  # the drift is unmistakable
    rule = AlertRule(name="memory-accuracy", metric="accuracy", scope="memory", op="<",
                     threshold=threshold, windows=2, min_samples=n_window,
                     retrain=True)  # fmt: skip
    ctx = MonitorContext(
        engine=engine, registry=registry, settings=Settings(),
        config=AlertConfig(rules=[rule], every="10D"),
        retrain=RetrainOptions(history_days=20, margin=0.01, min_tasks=200),
    )  # fmt: skip
    report = monitor_step(ctx)
    windows = report.snapshot.long().query("metric == 'accuracy' and scope == 'memory'")
    assert [a.rule for a in report.alerts][:1] == ["memory-accuracy"], windows.to_string()
    result = report.retrained
    assert result is not None and result.promoted, result and result.reason

    fresh = make_engine(f"sqlite:///{tmp_path / 'fresh.sqlite'}")
    generate_history(fresh, 1500, seed=12, first_task_id=900_000, progress=False,
                     **{**kwargs, "start": DRIFT_START, "days": 20})  # fmt: skip
    fresh_ids = read_history(fresh, with_jobs=False).tasks["jeditaskid"].tolist()
    after_fresh = _memory_accuracy(load_bundle(registry), fresh, fresh_ids)
    before_fresh = _memory_accuracy(champion, fresh, fresh_ids)
    print(json.dumps({
        "scenario": "release_drift", "memory_accuracy_pre_drift": round(pre_drift, 3),
        "post_drift_old_champion": round(before, 3), "alert_threshold": round(threshold, 3),
        "alert_margin": round(margin, 3),
        "fresh_post_drift": {"old": round(before_fresh, 3), "new": round(after_fresh, 3)},
    }))  # fmt: skip
    # the drift really hurts the stale champion, and retraining recovers (MARGIN_SD apart)
    n_pre, n_post, n_fresh = 300, len(new_ids), len(fresh_ids)
    assert pre_drift - before > MARGIN_SD * gap_sd(pre_drift, n_pre, before, n_post)
    assert after_fresh - before_fresh > MARGIN_SD * gap_sd(after_fresh, n_fresh, before_fresh,
                                                           n_fresh)  # fmt: skip
