"""How close the served value comes to the Bayes value, per demo size.

Reads demo folders (``table.parquet`` with the generator's truth, and ``bundle/``; one per
size, e.g. the replay benchmark's ``--workdir`` folders and one 200k demo) and prints, per
target, the bundle's value allocation on the test tasks: its under-allocation, its median
allocated ÷ needed, and that median over the Bayes value's at the level that
under-allocates ``alpha`` (``ratio``, as ``scoutless evaluate``) and at the level that
under-allocates as often as the served value did (``fair``: the goal's comparison, ≤ 1.05
at 20k tasks and ≤ 1.03 at 200k), with its 95 % bootstrap interval over the test tasks
(``fair_95``: how far the figure moves with the tasks it is measured on). ``--refit`` also refits each target's value model with
this checkout's code on the bundle's own split and seed (the same fit / validation /
calibration rows), to try a change without rerunning a demo.

    python benchmarks/values.py --demos W/demo_20000_42,W/demo_200000_42 --out results/values.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from record import add_out, emit, reference_loop_s
from scoutless.allocation.allocate import value_allocation
from scoutless.allocation.values import ConformalLevels, ValueDistribution
from scoutless.bundle import load_bundle
from scoutless.config import Settings
from scoutless.evaluation.allocations import bayes_at_under, true_distribution
from scoutless.history.table import TrainingTable
from scoutless.targets.spec import value_col
from scoutless.training.run import prepare_rows, target_data
from scoutless.training.value_heads import fit_value_head

#: item 5's goals: the largest fair ratio allowed at a demo size (tasks generated)
GOALS = {20_000: 1.05, 200_000: 1.03}
#: bootstrap draws of the fair ratio's interval
BOOTSTRAP_DRAWS = 200


def figures(
    dist: ValueDistribution, levels: ConformalLevels, test, target: str, alpha: float
) -> dict[str, float]:
    need = test[value_col(target)].to_numpy(dtype=float)
    known = np.isfinite(need) & (need > 0)
    value = value_allocation(dist, levels, alpha).value[known]
    need = need[known]
    truth = true_distribution(test[known], target)
    if truth is None:
        raise ValueError(f"{target}: the table has no truth columns (a synthetic demo's has)")
    under = float((need > value).mean())
    median = float(np.median(value / need))

    def bayes_median(level: float) -> float:
        return float(np.median(bayes_at_under(truth, need, level) / need))

    return {
        "under_allocation": round(under, 4),
        "median_ratio": round(median, 3),
        "ratio": round(median / bayes_median(alpha), 3),
        "fair": round(median / bayes_median(max(under, 1e-6)), 3),
        "fair_95": [round(f, 3) for f in fair_interval(value, need, truth)],
    }


def fair_interval(
    value: np.ndarray, need: np.ndarray, truth: ValueDistribution, draws: int = BOOTSTRAP_DRAWS
) -> tuple[float, float]:
    """The fair ratio's 95 % percentile-bootstrap interval over the test tasks (tasks drawn
    with replacement, the under-allocation and the Bayes level recomputed in each draw):
    how far the figure moves with the sample of tasks it is measured on alone."""
    rng = np.random.default_rng(0)
    fairs = []
    for _ in range(draws):
        rows = rng.integers(0, len(need), len(need))
        v, n, t = value[rows], need[rows], truth.take(rows)
        under = max(float((n > v).mean()), 1e-6)
        bayes = bayes_at_under(t, n, under)
        fairs.append(float(np.median(v / n)) / float(np.median(bayes / n)))
    low, high = np.quantile(fairs, [0.025, 0.975])
    return float(low), float(high)


def goal_for(tasks: int) -> float | None:
    """The fair ratio item 5 allows at this demo size (None: no goal at this size)."""
    return GOALS.get(tasks)


def demo_figures(demo: Path, alpha: float, refit: bool, threads: int) -> dict[str, Any]:
    """One demo folder's figures per target, and the goal's check."""
    table = TrainingTable.load(demo / "table.parquet")
    bundle = load_bundle(demo / "bundle")
    training = bundle.manifest["training"]
    test = table.split(training["split"])[1]
    features = test[[f.name for f in bundle.feature_specs]]
    encoded = bundle.encoder.transform(features)
    settings = Settings()
    prep = prepare_rows(table, training["split"], training["seed"], settings.splits) if refit else None
    # the demo's size: the tasks it generated (its table keeps those with finished jobs)
    tasks = int(bundle.manifest["table_info"].get("n_tasks_in_history", len(table.frame)))
    goal = goal_for(tasks)
    out: dict[str, Any] = {"tasks": tasks, "test_tasks": len(test), "goal": goal, "targets": {}}
    for target in bundle.targets:
        if not bundle.has_values(target):
            continue
        entry = {
            "bundle": figures(
                bundle.value_distribution(encoded, target), bundle.value_levels(target),
                test, target, alpha,
            )
        }  # fmt: skip
        if prep is not None:
            data = target_data(table, prep, target, settings.splits)
            model, scores = fit_value_head(table, data, n_jobs=threads, seed=training["seed"],
                                           settings=settings.training)  # fmt: skip
            entry["refit"] = figures(
                model.predict_dist(prep.encoder.transform(features)), ConformalLevels(scores),
                test, target, alpha,
            )  # fmt: skip
        out["targets"][target] = entry
        print(f"{demo.name} {target}: {json.dumps(entry)}", file=sys.stderr, flush=True)
    fair = {t: e["bundle"]["fair"] for t, e in out["targets"].items()}
    out["met"] = None if goal is None else all(f <= goal for f in fair.values())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demos", required=True, help="comma-separated demo folders")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--refit", action="store_true", help="also refit the value models")
    parser.add_argument("--threads", type=int, default=2)
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    demos = [Path(d) for d in args.demos.split(",") if d]
    results = {d.name: demo_figures(d, args.alpha, args.refit, args.threads) for d in demos}
    emit({"benchmark": "values", "alpha": args.alpha, "demos": results}, args.out, loop_before,
         indent=2)  # fmt: skip


if __name__ == "__main__":
    main()
