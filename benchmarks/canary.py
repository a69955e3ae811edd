"""A rollout rehearsed: the replay's canary written as PanDA's records, read by ``monitor impact``.

A bundle is trained on one synthetic history; a second history (other seed, the demo's
statistics) is replayed with the ``canary`` strategy (share 0.5) at two sizes, each written
with ``--write-history`` into its own SQLite file and read back by ``monitor impact``.
Prints JSON: per size, the largest relative difference between the impact's per-arm
figures and the replay's own (same tasks, same definitions: rounding only), the canary −
control differences with their bootstrap intervals, and how much the intervals narrow from
the small to the large replay (√(large / small) expected: 2 for 2,000 → 8,000).

    python benchmarks/canary.py [--tasks 2000 8000] [--train-tasks 4000] [--out results/canary.json]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from record import add_out, emit, reference_loop_s
from scoutless.bundle import load_bundle
from scoutless.config import get_settings
from scoutless.history.build import build_table_from_db
from scoutless.history.panda_db import make_engine
from scoutless.history.synthetic import generate_history
from scoutless.ops.impact import impact_report
from scoutless.ops.impact_store import collect_impact
from scoutless.ops.rehearsal import write_rehearsal
from scoutless.replay.canary import IMPACT_FIGURES
from scoutless.replay.runner import replay_history


def _history(path: Path, n: int, seed: int) -> str:
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    generate_history(engine, n, seed=seed, progress=False)
    engine.dispose()
    return url


def _largest_gap(arms: dict, per_arm) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """Largest |impact − replay| ÷ |replay| over the arms' figures, and how many compared."""
    got = per_arm.set_index(["arm", "figure"])["value"]
    worst, n = 0.0, 0
    for arm, entry in arms.items():
        for figure in IMPACT_FIGURES:
            want = entry["figures"][figure]
            have = float(got.get((arm, figure), math.nan))
            if want is None:
                worst = max(worst, 0.0 if math.isnan(have) else math.inf)
                continue
            worst = max(worst, abs(have - want) / max(abs(want), 1e-12))
            n += 1
    return worst, n


def _rehearse(url: str, bundle, n: int, folder: Path, settings) -> dict:  # type: ignore[no-untyped-def]
    kept = []
    started = time.perf_counter()
    document = replay_history(url, bundle, folder, settings, n_tasks=n, seed=1,
                              rehearse=kept.append)  # fmt: skip
    replay_s = time.perf_counter() - started
    target = f"sqlite:///{folder / 'written.sqlite'}"
    written = write_rehearsal(kept[0], url, target, settings, bins=bundle.bins)
    engine = make_engine(target)
    collect_impact(engine)
    report = impact_report(engine, every="30D")
    engine.dispose()
    arms = document["strategies"]["canary"]["arms"]
    gap, compared = _largest_gap(arms, report.per_arm)
    return {
        "tasks": document["workload"]["tasks"], "jobs_written": written.jobs,
        "replay_s": round(replay_s, 1), "arms": {a: e["n_tasks"] for a, e in arms.items()},
        "largest_relative_gap": gap, "figures_compared": compared,
        "differences": {d.figure: {"value": d.value, "lo": d.lo, "hi": d.hi,
                                   "width": d.hi - d.lo} for d in report.differences},
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, nargs=2, default=[2000, 8000])
    parser.add_argument("--train-tasks", type=int, default=4000)
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    from scoutless.training import train_bundle

    small, large = sorted(args.tasks)
    settings = get_settings()
    cfg = settings.replay.model_copy(update={"strategies": ["canary"], "canary_share": 0.5})
    settings = settings.model_copy(update={"replay": cfg})
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        train_url = _history(folder / "train.sqlite", args.train_tasks, seed=5)
        table, _ = build_table_from_db(make_engine(train_url))
        train_bundle(table, folder / "bundle", models=("xgb",), trials=0, progress=False, n_jobs=2)
        bundle = load_bundle(folder / "bundle")
        url = _history(folder / "replay.sqlite", int(large * 1.02) + 10, seed=9)
        runs = {}
        for n in (small, large):
            (folder / str(n)).mkdir()
            runs[str(n)] = _rehearse(url, bundle, n, folder / str(n), settings)
    widths = {
        f: runs[str(small)]["differences"][f]["width"] / runs[str(large)]["differences"][f]["width"]
        for f in IMPACT_FIGURES
        if f in runs[str(small)]["differences"]
        and np.isfinite(runs[str(large)]["differences"][f]["width"])
        and runs[str(large)]["differences"][f]["width"] > 0
    }  # fmt: skip
    expected = math.sqrt(runs[str(large)]["tasks"] / runs[str(small)]["tasks"])
    ratio = float(np.median(list(widths.values())))
    result = {
        "runs": runs, "width_ratio_by_figure": widths, "width_ratio_median": ratio,
        "width_ratio_expected": expected,
        "checks": {
            "equal_within_rounding": {"value": max(r["largest_relative_gap"] for r in runs.values()),
                                      "goal": "<= 0.002"},
            "narrows_as_sqrt_n": {"value": ratio, "goal": f"within 25% of {expected:.2f}"},
        },
    }  # fmt: skip
    result["checks"]["equal_within_rounding"]["met"] = (
        result["checks"]["equal_within_rounding"]["value"] <= 2e-3
    )
    result["checks"]["narrows_as_sqrt_n"]["met"] = abs(ratio / expected - 1) <= 0.25
    emit(result, args.out, loop_before, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
