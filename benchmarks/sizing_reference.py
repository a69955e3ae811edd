"""What the engine's own models allow on the nf-core cells, knowing more than the protocol
lets them: scoutless's sizer (the ``scoutless`` row of `benchmarks/sizing.py`) with the
outcomes of the rest of each type's online stream known up front (k-fold cross-fitting).

Each type's online instances are dealt into ``k`` folds by position (instance i to fold
i mod k; ``--block-folds``: into k contiguous stretches, so that what a fold knows is more
of the stream, not its neighbours in time); each fold is sized by a warm sizer whose
history holds the type's history and the other folds' instances, learning nothing as it
goes, so no instance is ever sized knowing its own outcome. The folds' wastage and
failures add up to the cell's. Against the best baseline of the same cell (``--against``,
the sizing benchmark's memory JSON, whose features the cells take and whose online figure
stands beside), this says how much of the gap to a goal is the learning curve (what the
stream has not yet revealed when an instance is sized) and how much the models (what
they reach once they know nearly everything else). With k = 2 a fold knows the history
and half the online instances: on average over the stream as much as the online sizer
knows when it sizes one (the history and the instances before it), spread over the
stream instead of behind it. A reference, not a bound: a sizer with other models may do
better. Each median comes with its 95 % bootstrap interval (``intervals``).

    nice python benchmarks/sizing_reference.py TRACES_DIR --folds 2,5 --block-folds 5 \\
        --jobs 2 --out results/sizing_reference.json
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from record import add_out, emit, reference_loop_s
from scoutless.config import SizingSettings
from scoutless.sizing.protocol import Instances, TaskType, task_types
from scoutless.sizing.report import median_interval
from scoutless.sizing.run import run_types, warm_sizer
from sizing import SEEDS
from sizing_cap import trace_frames


def cross_fit(types: list[TaskType], k: int, fold: int, blocks: bool = False) -> list[TaskType]:
    """The types with fold ``fold``'s online instances to size (in their order) and every
    other fold's in the history; a type with none in this fold is left out. ``blocks``:
    the folds are k contiguous stretches of the stream instead of dealt by position."""
    out = []
    for task in types:
        n = len(task.online)
        where = np.arange(n) * k // max(n, 1) if blocks else np.arange(n) % k
        own, rest = np.flatnonzero(where == fold), np.flatnonzero(where != fold)
        if len(own):
            history = Instances.concat([task.history, task.online.take(rest)])
            out.append(replace(task, history=history, online=task.online.take(own)))
    return out


def sized_ahead(types: list[TaskType], settings: SizingSettings) -> dict[str, Any]:
    """The types' online instances sized by a warm sizer that learns nothing as it goes:
    each from the history alone (the cell's figures)."""
    sizer = warm_sizer(types, settings)
    sizer.learn = lambda task, i, outcome: None  # type: ignore[method-assign]
    return run_types(types, [sizer])["methods"]["scoutless"]


def known_ahead(
    types: list[TaskType], k: int, settings: SizingSettings, blocks: bool = False
) -> dict[str, float]:
    """The cell's wastage (GB·h) and failures, each fold sized knowing the others."""
    wastage, failures = 0.0, 0
    for fold in range(k):
        cell = sized_ahead(cross_fit(types, k, fold, blocks), settings)
        wastage, failures = wastage + cell["wastage_gbh"], failures + cell["failures"]
    return {"wastage_gbh": wastage, "failures": failures}


def cell(frame: Any, name: str, seed: int, folds: list[str], against: dict) -> dict[str, Any]:
    """One workflow at one seed: the online figure and best baseline from ``against``, and
    each fold count's figures and ratio (``k5``: dealt by position; ``b5``: in blocks)."""
    types = task_types(frame, seed, name, features=against["features"])
    run = against["runs"][str(seed)]["workflows"][name]
    best = run["goal"]["scoutless"]
    base = best["baseline_wastage_gbh"]
    out: dict[str, Any] = {
        "workflow": name, "seed": seed, "best_baseline": best.get("best_baseline"),
        "baseline_gbh": base, "online_gbh": run["methods"]["scoutless"]["wastage_gbh"],
        "online_failures": run["methods"]["scoutless"]["failures"],
    }  # fmt: skip
    out["online_ratio"] = out["online_gbh"] / base
    for key in folds:
        got = known_ahead(types, int(key[1:]), SizingSettings(), blocks=key[0] == "b")
        out |= {f"{key}_gbh": got["wastage_gbh"], f"{key}_failures": got["failures"],
                f"{key}_ratio": got["wastage_gbh"] / base}  # fmt: skip
    print(f"seed {seed} {name}: {out}", file=sys.stderr, flush=True)
    return out


def summary(rows: list[dict[str, Any]], folds: list[str]) -> dict[str, Any]:
    """Over the cells: the median ratio online and per fold count, and the failures."""
    out: dict[str, Any] = {"cells": len(rows)}
    for key in ("online", *folds):
        out[f"{key}_median_ratio"] = float(np.median([r[f"{key}_ratio"] for r in rows]))
        out[f"{key}_failures"] = int(sum(r[f"{key}_failures"] for r in rows))
    return out


def intervals(rows: list[dict[str, Any]], folds: list[str]) -> dict[str, Any]:
    """Each median's 95 % bootstrap interval, the cells resampled (the sizing benchmark's)."""
    return {key: median_interval([r[f"{key}_ratio"] for r in rows]) for key in ("online", *folds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", type=Path, help="folder of trace_*.csv (Sizey's data/)")
    parser.add_argument("--seeds", default=SEEDS, help="comma list (the sizing benchmark's ten)")
    parser.add_argument("--folds", default="2,5", help="fold counts, comma-separated")
    parser.add_argument("--block-folds", default="5",
                        help="fold counts dealt in contiguous blocks ('' none)")  # fmt: skip
    parser.add_argument("--against", type=Path, default=Path("results/sizing.json"),
                        help="the sizing benchmark's JSON (best baseline, online figure)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1, help="cells sized in parallel")
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    against = json.loads(args.against.read_text())
    if against.get("resource") != "memory":
        parser.error(f"--against {args.against}: not the memory sizing benchmark's JSON")
    frames = trace_frames(parser, args.traces)
    seeds = [int(s) for s in args.seeds.split(",")]
    counts = {"k": args.folds, "b": args.block_folds}
    folds = [f"{d}{int(k)}" for d, given in counts.items() for k in given.split(",") if k.strip()]
    if any(int(k[1:]) < 2 for k in folds):
        parser.error("--folds, --block-folds: each fold count must be at least 2")
    jobs = [(frames[n], n, s, folds, against) for s in seeds for n in frames]
    with ProcessPoolExecutor(args.jobs, mp_context=get_context("fork")) as pool:
        rows = list(pool.map(cell, *zip(*jobs, strict=True)))
    result = {"seeds": seeds, "folds": folds, "against": str(args.against), "rows": rows,
              "summary": summary(rows, folds), "intervals": intervals(rows, folds)}  # fmt: skip
    emit(result, args.out, loop_before, indent=1)


if __name__ == "__main__":
    main()
