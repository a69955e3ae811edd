"""Training and prediction speed (and test-split quality) of the model families; prints JSON.

For each size: train seconds per family and target (no search), DNN samples/s per epoch,
peak RSS, single-task predict_proba latency for all targets, and accuracy / macro-F1 on
the table's random test split next to the Bayes limit (synthetic tables carry it).

    python benchmarks/train.py --tasks 200000 --tasks 1000000 --threads 2
    python benchmarks/train.py --table my_table.parquet

Tables are generated once (synthetic history -> SQLite -> build) and cached in --workdir.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, f1_score

from scoutless.bundle import load_bundle
from scoutless.history.table import TrainingTable
from scoutless.models.families import FAMILY_NAMES
from scoutless.targets.spec import bayes_class_col, class_col
from scoutless.training import train_bundle


def synthetic_table(n_tasks: int, workdir: Path, seed: int) -> Path:
    """A cached training table of ``n_tasks`` synthetic tasks."""
    path = workdir / f"table_{n_tasks}_{seed}.parquet"
    if path.exists():
        return path
    from scoutless.cli.data import synthetic_truth
    from scoutless.history.build import build_table_from_db
    from scoutless.history.panda_db import make_engine
    from scoutless.history.synthetic import generate_history

    db = workdir / f"history_{n_tasks}_{seed}.sqlite"
    db.unlink(missing_ok=True)
    engine = make_engine(f"sqlite:///{db}")
    generate_history(engine, n_tasks, seed=seed, progress=False)
    table, _ = build_table_from_db(engine, read_truth=synthetic_truth)
    table.save(path)
    engine.dispose()
    db.unlink(missing_ok=True)
    return path


def latency_ms(predictor, record: dict, repeats: int = 2000) -> dict[str, float]:
    """Single-task predict_proba for all targets (champions), in ms."""
    for _ in range(50):
        predictor.predict_proba(record)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        predictor.predict_proba(record)
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return {
        "median": round(statistics.median(times), 4),
        "p90": round(times[int(0.9 * len(times))], 4),
        "p99": round(times[int(0.99 * len(times))], 4),
    }


def latency_per_family(predictor, record: dict) -> dict[str, dict[str, float]]:
    out = {}
    names = set.intersection(*(set(predictor.models(t)) for t in predictor.targets))
    for name in sorted(names):
        for _ in range(20):
            predictor.predict_proba(record, model=name)
        start = time.perf_counter()
        for _ in range(500):
            predictor.predict_proba(record, model=name)
        out[name] = round((time.perf_counter() - start) / 500 * 1e3, 4)
    return out


def quality(predictor, table: TrainingTable) -> dict[str, dict[str, dict[str, float]]]:
    """Accuracy and macro-F1 on the random test split per target and model, plus Bayes."""
    _, test = table.split("random")
    proba = {
        name: predictor.predict_proba(test, model=name)
        for name in predictor.models(predictor.targets[0])
    }
    out: dict[str, dict[str, dict[str, float]]] = {}
    for t in predictor.targets:
        y = test[class_col(t)].to_numpy()
        ok = y >= 0
        out[t] = {}
        for name in predictor.models(t):
            predicted = proba[name][t].argmax(axis=1)
            out[t][name] = _scores(y[ok], predicted[ok])
        if bayes_class_col(t) in test.columns:
            out[t]["bayes"] = _scores(y[ok], test[bayes_class_col(t)].to_numpy()[ok])
    return out


def _scores(y: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    return {
        "accuracy": round(float(accuracy_score(y, predicted)), 4),
        "macro_f1": round(float(f1_score(y, predicted, average="macro", zero_division=0)), 4),
    }


def run(table_path: Path, args: argparse.Namespace) -> dict:
    import torch

    table = TrainingTable.load(table_path)
    out = args.workdir / f"bundle_{table_path.stem}"
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    train_bundle(
        table,
        out,
        models=args.models.split(","),
        progress=args.progress,
        max_epochs=args.max_epochs,
        n_jobs=args.threads,
    )
    total = time.perf_counter() - start
    predictor = load_bundle(out)
    manifest = predictor.manifest
    seconds = manifest["training"]["train_seconds"]
    per_family = {
        name: round(sum(seconds[t].get(name, 0.0) for t in seconds), 1)
        for name in manifest["training"]["models"]
    }
    dnn_speed = {}
    for t in predictor.targets:
        if "dnn" in predictor.models(t):
            history = predictor._models[t]["dnn"].history_
            dnn_speed[t] = {
                "samples_per_s": round(statistics.median(h["samples_per_s"] for h in history)),
                "epochs": len(history),
                "best_epoch": predictor._models[t]["dnn"].best_epoch_,
            }
    torch.set_num_threads(args.threads or torch.get_num_threads())
    record = table.X().iloc[0].to_dict()
    return {
        "table": str(table_path),
        "n_tasks": len(table.frame),
        "n_train_rows": manifest["training"]["n_train_rows"],
        "threads": args.threads,
        "total_train_seconds": round(total, 1),
        "train_seconds_per_family": per_family,
        "train_seconds": seconds,
        "dnn": dnn_speed,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "predict_one_task_all_targets_ms": latency_ms(predictor, record),
        "predict_one_task_per_family_ms": latency_per_family(predictor, record),
        "champion": manifest["champion"],
        "test_quality": quality(predictor, table),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, action="append", help="synthetic table size(s)")
    parser.add_argument("--table", type=Path, action="append", help="existing table(s)")
    parser.add_argument("--models", default=",".join(FAMILY_NAMES))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-epochs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/scoutless-bench"))
    parser.add_argument("--progress", action="store_true", help="show training progress")
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    tables = list(args.table or [])
    tables += [synthetic_table(n, args.workdir, args.seed) for n in args.tasks or []]
    if not tables:
        parser.error("give --tasks N or --table PATH")
    results = [run(path, args) for path in tables]
    json.dump({"benchmark": "train", "results": results}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
