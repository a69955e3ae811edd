"""Prediction quality on real traces: XGB and DNN against what schedulers use today.

Traces: the four Parallel Workloads Archive logs in ../shared/data/traces/swf/ and the
PanDA job records. Each is imported exactly as ``scoutless import`` does (time split: the
first 85 % of submit times train, the last 15 % test; quantile bins over the training rows;
baselines and user-history features without look-ahead). To bound the run on a small shared
machine, training uses at most ``--max-train`` random rows of the training period and the
scores at most ``--max-test`` random rows of the test period (features and baselines are
computed on the whole trace first, so subsampling does not change what each row knew).

Baselines are scored as ``scoutless evaluate`` scores them: a row without a baseline value
(no request, no finished history) takes the training majority class; coverage is reported.

Prints one JSON document: per trace and target, rows, macro-F1 and accuracy of
user_request, last2 (PanDA: the task's scout estimate, ``scout``), xgb and dnn, plus a
Markdown table for the README.

Cite: D. G. Feitelson, D. Tsafrir, D. Krakov, "Experience with using the Parallel Workloads
Archive", JPDC 74(10), 2014, and each log's donor (in the table's ``info['citation']``).

    python benchmarks/real_traces.py [--max-train 30000] [--max-test 8000] [--traces a,b]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from scoutless.bundle import load_bundle
from scoutless.evaluation.baselines import column_predictions, majority_class
from scoutless.evaluation.metrics import classification_metrics
from scoutless.history.table import TrainingTable
from scoutless.sources.assemble import to_training_table
from scoutless.sources.load import load_trace
from scoutless.targets.spec import baseline_class_col, class_col, scout_class_col
from scoutless.training import train_bundle

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"
TRACES: dict[str, tuple[str, list[Path]]] = {
    "LPC-EGEE": ("swf", [DATA / "swf/LPC-EGEE-2004-1.2-cln.swf.gz"]),
    "LANL-CM5": ("swf", [DATA / "swf/LANL-CM5-1994-4.1-cln.swf.gz"]),
    "CTC-SP2": ("swf", [DATA / "swf/CTC-SP2-1996-3.1-cln.swf.gz"]),
    "SDSC-SP2": ("swf", [DATA / "swf/SDSC-SP2-1998-4.2-cln.swf.gz"]),
    "PanDA-jobs": ("panda-jobs", sorted((DATA / "panda").glob("job_records_*.csv"))),
}
BASELINE_COLUMNS = {
    "user_request": lambda t: baseline_class_col(t, "user_request"),
    "last2": lambda t: baseline_class_col(t, "last2"),
    "scout": scout_class_col,
}


def subsample(table: TrainingTable, max_train: int, max_test: int, seed: int) -> TrainingTable:
    """At most max_train training and max_test test rows (time split kept)."""
    rng = np.random.default_rng(seed)
    frame = table.frame
    keep = []
    for part, limit in (("train", max_train), ("test", max_test)):
        rows = np.flatnonzero(frame["split_time"].eq(part).to_numpy())
        keep.append(rng.choice(rows, limit, replace=False) if len(rows) > limit else rows)
    picked = frame.iloc[np.sort(np.concatenate(keep))].reset_index(drop=True)
    return TrainingTable(picked, table.features, table.bins, table.source, table.info)


def _score(y: np.ndarray, pred: np.ndarray, labels: tuple[str, ...]) -> dict[str, Any]:
    m = classification_metrics(y, pred, labels)
    return {"macro_f1": m["macro_f1"], "accuracy": m["accuracy"]}


def score_trace(table: TrainingTable, bundle: Path) -> dict[str, Any]:
    predictor = load_bundle(bundle)
    train, test = table.split("time")
    out: dict[str, Any] = {}
    probas = {
        model: predictor.predict_proba(table.X(test), model=model)
        for model in ("xgb", "dnn")
        if all(model in predictor.models(t) for t in table.targets)
    }
    for t, bins in table.bins.items():
        y_all = test[class_col(t)].to_numpy(dtype=np.int64)
        valid = y_all >= 0
        y = y_all[valid]
        majority = majority_class(train[class_col(t)].to_numpy(dtype=np.int64), bins.n_classes)
        entry: dict[str, Any] = {"rows_train": int((train[class_col(t)] >= 0).sum()),
                                 "rows_test": int(valid.sum()), "unit": bins.unit,
                                 "n_classes": bins.n_classes, "models": {}}  # fmt: skip
        for name, column in BASELINE_COLUMNS.items():
            col = column(t)
            if col in test:
                pred, coverage = column_predictions(test[valid], col, bins.n_classes, majority)
                entry["models"][name] = _score(y, pred, bins.labels) | {"coverage": coverage}
        for model, proba in probas.items():
            entry["models"][model] = _score(y, proba[t][valid].argmax(axis=1), bins.labels)
        out[t] = entry
    return out


def markdown(results: dict[str, Any]) -> str:
    cols = ["user_request", "last2", "scout", "xgb", "dnn"]
    lines = [
        "| trace | target | rows (train/test) | " + " | ".join(cols) + " |",
        "|---|---|---|" + "---|" * len(cols),
    ]
    for trace, targets in results.items():
        for t, e in targets.items():
            cells = []
            for c in cols:
                m = e["models"].get(c)
                cells.append(f"{m['macro_f1']:.3f} / {m['accuracy']:.3f}" if m else "—")
            rows = f"{e['rows_train']}/{e['rows_test']}"
            lines.append(f"| {trace} | {t} | {rows} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\ncells: macro-F1 / accuracy on the last 15 % of submit times"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-train", type=int, default=30_000)
    parser.add_argument("--max-test", type=int, default=8_000)
    parser.add_argument("--max-epochs", type=int, default=25)
    parser.add_argument("--traces", default=",".join(TRACES))
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    torch.set_num_threads(1)
    results: dict[str, Any] = {}
    timings: dict[str, float] = {}
    sizes: dict[str, dict[str, int]] = {}
    for name in args.traces.split(","):
        fmt, files = TRACES[name]
        start = time.perf_counter()
        full = to_training_table(load_trace(fmt, files))
        table = subsample(full, args.max_train, args.max_test, args.seed)
        sizes[name] = {"rows": len(full.frame), "rows_used": len(table.frame)}
        with tempfile.TemporaryDirectory() as tmp:
            bundle = train_bundle(
                table, Path(tmp) / "bundle", models=("xgb", "dnn"), split="time",
                progress=False, max_epochs=args.max_epochs, seed=args.seed, n_jobs=1,
            )  # fmt: skip
            results[name] = score_trace(table, bundle)
        timings[name] = round(time.perf_counter() - start, 1)
        print(f"{name}: {timings[name]} s", file=sys.stderr)
    print(
        json.dumps(
            {
                "benchmark": "real_traces",
                "split": "time (last 15 % of submit times = test)",
                "max_train": args.max_train,
                "max_test": args.max_test,
                "sizes": sizes,
                "seconds": timings,
                "results": results,
                "markdown": markdown(results),
                "citation": "D. G. Feitelson, D. Tsafrir, D. Krakov, 'Experience with using "
                "the Parallel Workloads Archive', JPDC 74(10), 2014",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
