"""One served row through XGBoost: the numpy trees, their compiled walk (the service's,
``models/tree_walk.py``) and ``inplace_predict``.

Prints one JSON line: per model size (rounds) and row count, microseconds per call of
the three paths (median of repeats, one-thread booster as the service keeps it), the
nodes, and the largest margin difference of each walk (0: bit for bit). Models are trained here on a
generated table with a wide categorical column, as the service's champions have.
`python benchmarks/xgb_inference.py --rounds 25 100 400`
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import xgboost as xgb

from record import add_out, emit, reference_loop_s
from scoutless.models import tree_walk
from scoutless.models.xgb_inference import build_ensemble


def _table(n: int, n_classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [rng.integers(0, 2000, n), rng.integers(0, 12, n), *rng.normal(size=(20, n))]
    ).astype(np.float32)
    y = (X[:, 0] % 7 + (X[:, 2] > 0) + 2 * (X[:, 1] == 3) + (X[:, 3] > 1)).astype(int) % n_classes
    return X, y


def per_call_us(fn, budget_s: float) -> float:
    """Median over 5 timings of as many calls as fit in ``budget_s`` / 5 (at least one)."""
    start = time.perf_counter()
    fn()
    repeats = max(1, int(budget_s / 5 / max(time.perf_counter() - start, 1e-6)))
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        times.append((time.perf_counter() - start) / repeats * 1e6)
    return round(float(np.median(times)), 1)


def measure(rounds: int, rows: list[int], n_classes: int, budget_s: float) -> list[dict]:
    X, y = _table(10_000, n_classes)
    types = ["c", "c"] + ["q"] * (X.shape[1] - 2)
    data = xgb.DMatrix(X, label=y, feature_types=types, enable_categorical=True)
    params = {"objective": "multi:softprob", "num_class": n_classes, "max_depth": 6,
              "tree_method": "hist", "nthread": 1, "seed": 0}  # fmt: skip
    booster = xgb.train(params, data, rounds)
    trees = build_ensemble(booster)
    out = []
    for n in rows:
        batch = X[:n]
        margin = booster.inplace_predict(batch, predict_type="margin").reshape(n, -1)
        tree_walk.unload()
        row = {
            "rounds": rounds, "rows": n, "nodes": len(trees.left), "fits": trees.fits(n),
            "numpy_us": per_call_us(lambda b=batch: trees.predict_proba(b), budget_s),
            "inplace_predict_us": per_call_us(
                lambda b=batch: booster.inplace_predict(b, validate_features=False), budget_s
            ),
            "max_margin_difference": float(np.abs(trees.margin(batch) - margin).max()),
        }  # fmt: skip
        if tree_walk.load():
            row["compiled_us"] = per_call_us(lambda b=batch: trees.predict_proba(b), budget_s)
            row["max_margin_difference_compiled"] = float(
                np.abs(trees.margin(batch) - margin).max()
            )
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, nargs="+", default=[25, 100, 400])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=0.5, help="timing budget per cell")
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    results = [r for n in args.rounds for r in measure(n, args.rows, args.classes, args.seconds)]
    emit({"benchmark": "xgb_inference", "results": results}, args.out, loop_before)


if __name__ == "__main__":
    main()
