"""How close the value allocation comes to the Bayes value, without rerunning a demo.

Reads a demo folder (``table.parquet`` with the generator's truth, and ``bundle/``), refits
each target's value model with this checkout's code on the bundle's own split and seed (the
same fit / validation / calibration rows), and prints per target the served value's
under-allocation on the test tasks and its median allocated ÷ needed over the Bayes
value's at the level that under-allocates alpha (``ratio``, as ``scoutless evaluate``) and
at the level that under-allocates as often as the served value did (``fair``); the bundle's
stored value model beside it. A study tool, not a test:
``python scripts/value_limit.py DEMO_FOLDER``.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from scoutless.allocation.allocate import value_allocation
from scoutless.allocation.values import ConformalLevels, ValueDistribution
from scoutless.bundle import load_bundle
from scoutless.history.table import TrainingTable
from scoutless.targets.spec import TRUTH_PARTS, truth_col, value_col
from scoutless.training.run import prepare_rows, target_data
from scoutless.training.value_heads import fit_value_head


def _bayes_median(truth: ValueDistribution, need: np.ndarray, under: float) -> float:
    """The true distribution's median allocated ÷ needed at the level under-allocating
    ``under`` of these tasks."""
    z = float(np.quantile(truth.z_scores(need), 1 - under))
    return float(np.median(truth.at_z(z) / need))


def figures(
    dist: ValueDistribution, levels: ConformalLevels, test, target: str, alpha: float
) -> dict[str, float]:
    need = test[value_col(target)].to_numpy(dtype=float)
    known = np.isfinite(need) & (need > 0)
    value = value_allocation(dist, levels, alpha).value[known]
    need = need[known]
    mu, sigma, offset = (test[truth_col(target, p)].to_numpy(float)[known] for p in TRUTH_PARTS)
    truth = ValueDistribution.of(offset, mu, sigma)
    under = float((need > value).mean())
    median = float(np.median(value / need))
    return {
        "under_allocation": round(under, 4),
        "median_ratio": round(median, 3),
        "ratio": round(median / _bayes_median(truth, need, alpha), 3),
        "fair": round(median / _bayes_median(truth, need, max(under, 1e-6)), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("demo", help="a demo folder: table.parquet and bundle/")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    table = TrainingTable.load(f"{args.demo}/table.parquet")
    bundle = load_bundle(f"{args.demo}/bundle")
    training = bundle.manifest["training"]
    prep = prepare_rows(table, training["split"], training["seed"])
    test = table.split(training["split"])[1]
    features = test[[f.name for f in bundle.feature_specs]]
    encoded, refit_encoded = bundle.encoder.transform(features), prep.encoder.transform(features)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for target in bundle.targets:
        if not bundle.has_values(target):
            continue
        data = target_data(table, prep, target)
        model, scores = fit_value_head(table, data, n_jobs=args.threads, seed=training["seed"])
        out[target] = {
            "bundle": figures(
                bundle.value_distribution(encoded, target), bundle.value_levels(target),
                test, target, args.alpha,
            ),
            "refit": figures(
                model.predict_dist(refit_encoded), ConformalLevels(scores), test, target, args.alpha
            ),
        }  # fmt: skip
        print(json.dumps({target: out[target]}), flush=True)


if __name__ == "__main__":
    main()
