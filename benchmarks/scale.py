"""Scale-out figures, one JSON object per run on stdout.

    # a synthetic PanDA history as a Parquet export (not timed; long-tailed jobs per task)
    python benchmarks/scale.py export --tasks 200000 --export /data/export
    # (a) out-of-core build: 2 workers of 4 GB, wall time, peak worker memory, spill,
    #     exactness of a 1 % sample of tasks against the single-process code
    python benchmarks/scale.py outofcore --export /data/export --workers 2 --memory 4GB
    # (b) strong scaling, 1 vs 2 workers, build and XGBoost (needs >= 4 free cores)
    python benchmarks/scale.py scaling --export /data/export
    # (c) end to end: export -> Dask build -> XGBoost on Dask + DNN on torchrun -> bundle
    python benchmarks/scale.py endtoend --tasks 4000000 --work /data/scale

Every size is an argument: the goal's 4M tasks / >= 150M job rows is ``--tasks 4000000``
(the generator averages 26.5 jobs per task, so ``--tasks 5700000`` reaches 150M rows).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from record import add_out, emit, reference_loop_s
from scoutless.config import Settings
from scoutless.distributed.build import build_partitioned_table
from scoutless.distributed.sources import (
    EXPORT_TABLES,
    TRUTH_FOLDER,
    assemble_part,
    export_partitions,
)
from scoutless.history.build import task_rows
from scoutless.history.synthetic import bayes_probabilities
from scoutless.history.table import TrainingTable
from scoutless.history.validation import BadRowReport
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import class_col


def write_synthetic_export(n_tasks: int, out: Path, seed: int, chunk_tasks: int) -> dict:
    """The generator's history, chunk by chunk, as a Parquet export (job files unsorted)."""
    from scoutless.distributed.sources import write_export
    from scoutless.history.synthetic import iter_chunks

    started, n_jobs = time.perf_counter(), 0
    rng = np.random.default_rng(seed)
    for i, frames in enumerate(iter_chunks(n_tasks, seed=seed, chunk_tasks=chunk_tasks)):
        jobs = frames.jobs.iloc[rng.permutation(len(frames.jobs))]
        write_export(
            {"tasks": frames.tasks, "taskparams": frames.taskparams,
             "datasets": frames.datasets, "jobs": jobs, "truth": frames.truth},
            out, i,
        )  # fmt: skip
        n_jobs += len(jobs)
    return {
        "tasks": n_tasks,
        "job_rows": n_jobs,
        "seconds": round(time.perf_counter() - started, 1),
    }


class WorkerWatch:
    """Samples every worker's memory and spilled bytes from the scheduler while it runs."""

    def __init__(self, client, every_s: float = 0.5) -> None:  # type: ignore[no-untyped-def]
        self.client, self.every_s = client, every_s
        self.peak_memory, self.peak_spilled = 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):
                for worker in self.client.scheduler_info(n_workers=-1)["workers"].values():
                    metrics = worker.get("metrics", {})
                    self.peak_memory = max(self.peak_memory, int(metrics.get("memory", 0)))
                    spilled = metrics.get("spilled_bytes", {}).get("disk", 0)
                    self.peak_spilled = max(self.peak_spilled, int(spilled))
            self._stop.wait(self.every_s)

    def __enter__(self) -> WorkerWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@contextlib.contextmanager
def cluster(workers: int, memory: str) -> Iterator[object]:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, memory_limit=memory, dashboard_address=None
        ) as local,
        Client(local) as client,
    ):
        yield client


def timed_build(client, export: Path, out: Path, per_partition: int) -> dict:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    with WorkerWatch(client) as watch:
        parts = export_partitions(export, per_partition, probabilities=bayes_probabilities)
        build, _ = build_partitioned_table(client, parts, out, settings=Settings())
    return {
        "wall_s": round(time.perf_counter() - started, 1),
        "peak_worker_memory_mb": round(watch.peak_memory / 2**20),
        "peak_spilled_to_disk_mb": round(watch.peak_spilled / 2**20),
        "partitions": build.info["partitions"],
        "tasks_in_table": len(build.frame),
        "job_rows": build.info["n_jobs_in_history"],
    }


def _read_sample(export: Path, ids: list[int]) -> dict[str, pd.DataFrame]:
    """The sample's rows of every exported table, indexed by jeditaskid (as the shuffle gives)."""
    keys = {**EXPORT_TABLES}
    if (export / TRUTH_FOLDER).exists():
        keys["truth"] = TRUTH_FOLDER
    return {
        key: pq.read_table(export / name, filters=[("jeditaskid", "in", ids)])
        .to_pandas()
        .set_index("jeditaskid")
        .sort_index()
        for key, name in keys.items()
    }


def sample_exactness(export: Path, table_path: Path, fraction: float, seed: int) -> dict:
    """Per-task columns of a random sample of tasks, recomputed by the single-process code
    (task_rows on just those tasks), against the Dask table: cells that differ."""
    common = pq.read_schema(table_path / "_common_metadata")
    ids_all = pq.read_table(table_path, columns=["jeditaskid"], schema=common)["jeditaskid"]
    ids_all = ids_all.to_numpy()
    rng = np.random.default_rng(seed)
    ids = sorted(rng.choice(ids_all, max(1, int(fraction * len(ids_all))), replace=False).tolist())
    part = assemble_part(**_read_sample(export, ids))
    single = task_rows(part.history, BadRowReport(), Settings()).sort_values("jeditaskid")
    dask_rows = pq.read_table(table_path, schema=common, filters=[("jeditaskid", "in", ids)])
    dask_rows = dask_rows.to_pandas().sort_values("jeditaskid").reset_index(drop=True)
    meta = json.loads(common.metadata[b"scoutless"])
    bins = {t: TargetBins.from_dict(b) for t, b in meta["bins"].items()}
    single = pd.read_parquet(_roundtrip(single)).reset_index(drop=True)
    mismatched = 0
    for column in single.columns:
        a, b = single[column], dask_rows[column]
        mismatched += int((~((a == b) | (a.isna() & b.isna()))).sum())
    for target in bins:
        classes = bins[target].classify(single[f"{target}_value"].to_numpy())
        mismatched += int((classes != dask_rows[class_col(target)].to_numpy()).sum())
    return {
        "sample_tasks": len(ids),
        "columns_compared": len(single.columns) + len(bins),
        "mismatched_cells": mismatched,
        "exact": mismatched == 0,
    }


def _roundtrip(frame: pd.DataFrame):  # type: ignore[no-untyped-def]
    """The frame as Parquet bytes: both sides compared after the same serialisation."""
    import io

    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    buffer.seek(0)
    return buffer


def xgb_fit_seconds(client, table: TrainingTable, n_trees: int) -> float:  # type: ignore[no-untyped-def]
    """Wall time of one native-categorical XGBoost fit (memory target) on the cluster."""
    from scoutless.distributed.xgb import fit_xgb_on_dask
    from scoutless.features.encoders import FeatureEncoder
    from scoutless.models.base import balanced_class_weight
    from scoutless.models.xgb import XGBNativeModel

    train, test = table.split("random")
    train = train[train[class_col("memory")] >= 0]
    test = test[test[class_col("memory")] >= 0]
    encoder = FeatureEncoder(table.features).fit(train)
    y, y_val = (f[class_col("memory")].to_numpy() for f in (train, test))
    n_classes = table.bins["memory"].n_classes
    model = XGBNativeModel(n_classes=n_classes, n_estimators=n_trees, early_stopping_rounds=n_trees)
    started = time.perf_counter()
    fit_xgb_on_dask(
        client, model, encoder.transform(train), y,
        eval_set=(encoder.transform(test), y_val),
        class_weight=balanced_class_weight(y, n_classes),
    )  # fmt: skip
    return round(time.perf_counter() - started, 1)


def peak_rss_mb() -> int:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def run_outofcore(args: argparse.Namespace) -> dict:
    """(a) the build with ``--workers`` workers of ``--memory`` each, then the 1 % check."""
    out = args.work / "table"
    with cluster(args.workers, args.memory) as client:
        build = timed_build(client, args.export, out, args.partition_tasks)
    exact = sample_exactness(args.export, out, args.sample, args.seed)
    return {"workers": args.workers, "worker_memory_limit": args.memory, **build,
            "sample_check": exact, "client_peak_rss_mb": peak_rss_mb()}  # fmt: skip


def run_scaling(args: argparse.Namespace) -> dict:
    """(b) build and XGBoost wall times with 1 and with 2 workers; ratio = speed-up."""
    result: dict[str, dict] = {"build": {}, "xgboost": {}}
    for workers in (1, 2):
        with cluster(workers, args.memory) as client:
            out = args.work / f"table-{workers}"
            result["build"][str(workers)] = timed_build(
                client, args.export, out, args.partition_tasks
            )["wall_s"]
            table = TrainingTable.load(out)
            result["xgboost"][str(workers)] = xgb_fit_seconds(client, table, args.trees)
    for step, goal in (("build", 1.6), ("xgboost", 1.5)):
        ratio = result[step]["1"] / result[step]["2"]
        result[step].update(speedup=round(ratio, 2), goal=goal, met=ratio >= goal)
    return {**result, "cpu_count": os.cpu_count(), "load_avg_1m": os.getloadavg()[0]}


def run_endtoend(args: argparse.Namespace) -> dict:
    """(c) export (if absent) -> Dask build -> bundle with XGBoost on Dask and DDP DNN."""
    from scoutless.distributed.fitting import DistributedFitter
    from scoutless.training import train_bundle

    timings: dict[str, object] = {}
    if not (args.export / "jedi_tasks").exists():
        timings["export"] = write_synthetic_export(args.tasks, args.export, args.seed, 20_000)
    with cluster(args.workers, args.memory) as client:
        timings["build"] = timed_build(
            client, args.export, args.work / "table", args.partition_tasks
        )
        table = TrainingTable.load(args.work / "table")
        started = time.perf_counter()
        fitter = DistributedFitter(client, nproc_per_node=args.ranks)
        train_bundle(table, args.work / "bundle", progress=False, fit_model=fitter,
                     max_epochs=args.max_epochs, settings=Settings())  # fmt: skip
        timings["train_s"] = round(time.perf_counter() - started, 1)
    return {**timings, "client_peak_rss_mb": peak_rss_mb()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("step", choices=["export", "outofcore", "scaling", "endtoend"])
    parser.add_argument("--tasks", type=int, default=200_000)
    parser.add_argument("--export", type=Path, default=Path("scale-work/export"))
    parser.add_argument("--work", type=Path, default=Path("scale-work"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory", default="4GB", help="memory limit per worker")
    parser.add_argument("--partition-tasks", type=int, default=50_000)
    parser.add_argument("--sample", type=float, default=0.01, help="share of tasks checked")
    parser.add_argument("--trees", type=int, default=100, help="scaling: XGBoost rounds")
    parser.add_argument("--ranks", type=int, default=2, help="endtoend: DDP ranks")
    parser.add_argument("--max-epochs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=42)
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.step == "export":
        result = write_synthetic_export(args.tasks, args.export, args.seed, 20_000)
    else:
        result = {"outofcore": run_outofcore, "scaling": run_scaling, "endtoend": run_endtoend}[
            args.step
        ](args)
    emit({"benchmark": f"scale {args.step}", **result}, args.out, loop_before)


if __name__ == "__main__":
    main()
