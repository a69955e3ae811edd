"""Training and prediction speed (and test-split quality) of the model families; prints JSON.

For each size: train seconds per family and target (no search), DNN samples/s per epoch,
peak RSS, single-task predict_proba latency for all targets, and accuracy / macro-F1 on
the table's random test split next to the Bayes limit (synthetic tables carry it).

    python benchmarks/train.py --tasks 200000 --tasks 1000000 --threads 2
    python benchmarks/train.py --table my_table.parquet
    python benchmarks/train.py --table t.parquet --sizes 20000,50000,200000 --seeds 42,43,44

Tables are generated once (synthetic history -> SQLite -> build) and cached in --workdir.
``--sizes`` draws learning curves from one table (random subsets of its tasks, smallest
first, so the peak RSS after each size is that size's peak); with several ``--seeds`` every
figure is given as mean and spread (max - min) over the seeds, and each family's accuracy
as a share of the Bayes limit.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, f1_score

from record import add_out, emit, reference_loop_s
from scoutless.bundle import load_bundle
from scoutless.config import Settings
from scoutless.evaluation.policies_eval import evaluate_policies
from scoutless.history.table import TrainingTable
from scoutless.models.families import FAMILY_NAMES
from scoutless.models.tuning import DEFAULT_DNN_VARIANTS
from scoutless.targets.spec import bayes_class_col, class_col, value_col
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
    table, _ = build_table_from_db(engine, read_truth=synthetic_truth, settings=Settings())
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
        values = test[value_col(t)].to_numpy(dtype=float)[ok]
        for name in predictor.models(t):
            predicted = proba[name][t].argmax(axis=1)
            out[t][name] = _scores(y[ok], predicted[ok]) | _allocation(
                predictor, t, name, proba[name][t][ok], y[ok], values, table.bins[t]
            )
        if bayes_class_col(t) in test.columns:
            out[t]["bayes"] = _scores(y[ok], test[bayes_class_col(t)].to_numpy()[ok])
    return out


def _allocation(predictor, target, name, proba, y, values, bins) -> dict[str, float]:
    """Under-/over-allocation of argmax and of the risk policy (α = 0.05, fitted on the
    bundle's calibration rows) on the test rows."""
    cal_proba, cal_y = predictor.calibration(target, name)
    policies = evaluate_policies(proba, y, values, bins, cal_proba, cal_y, model=name)
    return {
        f"{policy}_{key}": round(policies[policy][key], 4)
        for policy in ("argmax", "risk")
        for key in ("under_allocation_rate", "over_allocation_median")
        if policies[policy][key] is not None
    }


def rescore(bundle: Path, table_path: Path) -> dict:
    """Quality of an existing bundle on a table's random test split (no training)."""
    predictor = load_bundle(bundle)
    hyper = predictor.manifest["hyperparameters"]
    return {
        "bundle": str(bundle),
        "table": str(table_path),
        "dnn_variant": {t: hyper[t].get("dnn", {}).get("variant") for t in hyper},
        "test_quality": quality(predictor, TrainingTable.load(table_path)),
    }


def _scores(y: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    return {
        "accuracy": round(float(accuracy_score(y, predicted)), 4),
        "macro_f1": round(float(f1_score(y, predicted, average="macro", zero_division=0)), 4),
    }


def subset(table: TrainingTable, n_tasks: int, seed: int = 0) -> TrainingTable:
    """A random ``n_tasks``-task subset of ``table`` (its split columns kept)."""
    if n_tasks >= len(table.frame):
        return table
    frame = table.frame.sample(n_tasks, random_state=seed).sort_index()
    return TrainingTable(frame, table.features, table.bins, table.source, dict(table.info))


def run(table_path: Path, args: argparse.Namespace, table: TrainingTable | None = None) -> dict:
    import torch

    table = table if table is not None else TrainingTable.load(table_path)
    out = args.workdir / f"bundle_{table_path.stem}_{len(table.frame)}_{args.seed}"
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    train_bundle(
        table,
        out,
        models=args.models.split(","),
        seed=args.seed,
        progress=args.progress,
        max_epochs=args.max_epochs,
        n_jobs=args.threads,
        dnn_variants=args.dnn_variants.split(","),
        settings=Settings(),
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
                "variant": manifest["hyperparameters"][t]["dnn"].get("variant"),
                "variant_search": manifest["hyperparameters"][t]["dnn"].get("variant_search"),
            }
    torch.set_num_threads(args.threads or torch.get_num_threads())
    record = table.X().iloc[0].to_dict()
    return {
        "table": str(table_path),
        "seed": args.seed,
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


def _spread(values: list[float]) -> dict[str, float]:
    return {
        "mean": round(statistics.mean(values), 4),
        "spread": round(max(values) - min(values), 4),
        "runs": [round(v, 4) for v in values],
    }


def curve_point(runs: list[dict]) -> dict:
    """One size of the learning curve: every family's quality over the seeds, vs Bayes."""
    first = runs[0]
    quality_out: dict[str, dict[str, dict]] = {}
    for t, by_model in first["test_quality"].items():
        quality_out[t] = {}
        for name in by_model:
            acc = [r["test_quality"][t][name]["accuracy"] for r in runs]
            f1 = [r["test_quality"][t][name]["macro_f1"] for r in runs]
            quality_out[t][name] = {"accuracy": _spread(acc), "macro_f1": _spread(f1)}
            if "bayes" in by_model and name != "bayes":
                ratio = [
                    r["test_quality"][t][name]["accuracy"]
                    / r["test_quality"][t]["bayes"]["accuracy"]
                    for r in runs
                ]
                quality_out[t][name]["accuracy_over_bayes"] = _spread(ratio)
    return {
        "n_tasks": first["n_tasks"],
        "seeds": [r["seed"] for r in runs],
        "quality": quality_out,
        "train_seconds_per_family": {
            name: _spread([r["train_seconds_per_family"][name] for r in runs])
            for name in first["train_seconds_per_family"]
        },
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "dnn": [r["dnn"] for r in runs],
    }


def learning_curve(table_path: Path, sizes: list[int], seeds: list[int], args) -> list[dict]:
    """Per size (ascending), per seed: a full training run; aggregated per size."""
    full = TrainingTable.load(table_path)
    points = []
    for size in sorted(sizes):
        table = subset(full, size)
        runs = []
        for seed in seeds:
            args.seed = seed
            runs.append({**run(table_path, args, table), "seed": seed})
        points.append(curve_point(runs))
    return points


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
    parser.add_argument("--sizes", help="learning curve: comma-separated task counts")
    parser.add_argument("--rescore", type=Path, help="score this bundle on --table, no training")
    parser.add_argument("--seeds", help="learning curve: comma-separated seeds (default --seed)")
    parser.add_argument(
        "--dnn-variants", default=",".join(DEFAULT_DNN_VARIANTS), help="DNN variants to try"
    )
    add_out(parser)
    args = parser.parse_args(argv)
    loop_before = reference_loop_s()
    args.workdir.mkdir(parents=True, exist_ok=True)
    tables = list(args.table or [])
    tables += [synthetic_table(n, args.workdir, args.seed) for n in args.tasks or []]
    if not tables:
        parser.error("give --tasks N or --table PATH")
    if args.rescore:
        result = {"benchmark": "train_rescore", **rescore(args.rescore, tables[0])}
        emit(result, args.out, loop_before, indent=1)
        return
    if args.sizes:
        sizes = [int(n) for n in args.sizes.split(",")]
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else [args.seed]
        curve = [learning_curve(path, sizes, seeds, args) for path in tables]
        emit(
            {"benchmark": "train_learning_curve", "curves": curve}, args.out, loop_before, indent=1
        )
        return
    results = [run(path, args) for path in tables]
    emit({"benchmark": "train", "results": results}, args.out, loop_before, indent=1)


if __name__ == "__main__":
    main()
