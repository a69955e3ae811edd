"""The promise kept under the generator's ``release_drift`` scenario.

A bundle is trained on the tasks created before a new release raises memory (1.75× for the
drift families' processing types); the tasks after it are predicted with the ``value``
policy at α, in two windows. Prints JSON: per window and group, the realised memory
under-allocation against α (and whether ``ops.promise`` flags it), then the same for the
second window with the calibration refitted on the first (``ops.promise.refit``).

    python benchmarks/promise.py [--tasks 8000] [--alpha 0.1] [--out results/promise.json]
"""

from __future__ import annotations

import argparse
import tempfile
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from record import add_out, emit, reference_loop_s
from scoutless.config import RolloutSettings, Settings
from scoutless.history.build import build_table_from_db
from scoutless.history.panda_db import create_schema, make_engine, read_history
from scoutless.history.synthetic import generate_chunk
from scoutless.history.synthetic.truth import synthetic_truth
from scoutless.history.synthetic.writer import write_frames
from scoutless.ops.prediction_log import long_form
from scoutless.ops.promise import judged, promise_by_window, refit
from scoutless.targets.estimators import compute_task_targets

START = datetime(2026, 1, 1)
DAYS = 90.0
DRIFT = START + timedelta(days=60)
SPLIT = START + timedelta(days=75)  # the two windows after the drift


def _frames(frames, keep):  # type: ignore[no-untyped-def]
    ids = set(frames.tasks.loc[keep, "jeditaskid"].astype(int))
    out = {}
    for name in ("tasks", "taskparams", "datasets", "jobs", "truth"):
        frame = getattr(frames, name)
        out[name] = frame[frame["jeditaskid"].isin(ids)]
    return type(frames)(**out)


def _predict(engine, bundle: Path, ids: list[int], alpha: float):  # type: ignore[no-untyped-def]
    """Prediction-log rows (long form) of the tasks under the value policy, stamped with
    their creation time, and their actual values."""
    from scoutless.bundle import load_bundle
    from scoutless.service.pipeline import Pipeline

    history = read_history(engine, ids)
    features = history.features()
    rows = [dict(r, jeditaskid=int(t)) for t, r in features.iterrows()]
    with ThreadPoolExecutor(2) as pool:
        pipeline = Pipeline(load_bundle(bundle), None, pool, settings=Settings())
        result = pipeline.run(rows, policy="value", alpha=alpha)
    created = history.tasks.set_index("jeditaskid")["creationdate"]
    for row in result.log_rows:
        row["created_at"] = created[row["jeditaskid"]]
        row["id"] = row["jeditaskid"]
    log = long_form(result.log_rows)
    values = compute_task_targets(history.jobs, history.tasks, settings=Settings())
    actuals = values.reset_index().melt(id_vars=values.index.name or "index", var_name="target")
    actuals = actuals.rename(columns={values.index.name or "index": "jeditaskid"}).dropna()
    actuals["class_id"] = 0
    return log, actuals


def _rates(rows: pd.DataFrame, drifted_types: set[str]) -> dict[str, float]:
    mem = rows[rows["target"] == "memory"]
    hit = mem["processingtype"].astype(str).isin(drifted_types)
    return {"all": float(mem["under"].mean()), "drifted": float(mem.loc[hit, "under"].mean()),
            "not_drifted": float(mem.loc[~hit, "under"].mean()),
            "n_drifted": int(hit.sum()), "n_all": len(mem)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=8000)
    parser.add_argument("--alpha", type=float, default=0.1)
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    from scoutless.training import train_bundle

    frames = generate_chunk(args.tasks, seed=11, start=START, days=DAYS,
                            scenario="release_drift", drift_start=DRIFT)  # fmt: skip
    created = pd.to_datetime(frames.tasks["creationdate"])
    with tempfile.TemporaryDirectory() as tmp:
        before, after = (
            make_engine(f"sqlite:///{tmp}/before.sqlite"),
            make_engine(f"sqlite:///{tmp}/after.sqlite"),
        )
        for engine, keep in ((before, created < DRIFT), (after, created >= DRIFT)):
            create_schema(engine)
            synthetic_truth.create(engine, checkfirst=True)
            write_frames(engine, _frames(frames, keep.to_numpy()))
        table, _ = build_table_from_db(before, settings=Settings())
        bundle = train_bundle(
            table, Path(tmp) / "bundle", models=("xgb",), progress=False, n_jobs=2, settings=Settings()
        )
        ids = frames.tasks.loc[(created >= DRIFT).to_numpy(), "jeditaskid"].astype(int).tolist()
        log, actuals = _predict(after, bundle, ids, args.alpha)
    truth = frames.truth.set_index("jeditaskid")
    drifted_ids = set(truth.index[truth["drifted"] == 1].astype(int))
    rows = judged(log, actuals)
    drifted_types = set(
        rows.loc[rows["jeditaskid"].isin(drifted_ids), "processingtype"].astype(str)
    )
    first = rows[pd.to_datetime(rows["created_at"]) < SPLIT]
    second = rows[pd.to_datetime(rows["created_at"]) >= SPLIT]
    settings = RolloutSettings(promise_min_tasks=30)
    table1 = promise_by_window(first.assign(created_at=DRIFT), "1D", settings)
    flagged = sorted(table1.loc[table1["breached"] & (table1["target"] == "memory"), "group"])
    recal = refit(first, DRIFT, args.alpha, min_n=settings.promise_min_tasks)
    factors = np.array([recal.factor("memory", r) for r in second.to_dict("records")])
    fixed = second.copy()
    mem = fixed["target"] == "memory"
    given = fixed.loc[mem, "recommended_value"].astype(float) * factors[mem.to_numpy()]
    fixed.loc[mem, "under"] = fixed.loc[mem, "actual_value"].astype(float) > given
    result = {
        "tasks": args.tasks, "alpha": args.alpha, "drifted_processing_types": sorted(drifted_types),
        "window1_under": _rates(first, drifted_types), "window1_flagged_groups": flagged,
        "window2_under_without_refit": _rates(second, drifted_types),
        "window2_under_with_refit": _rates(fixed, drifted_types),
        "refit_memory_factors": recal.factors.get("memory", {}),
    }  # fmt: skip
    emit(result, args.out, loop_before, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
