"""Online per-instance sizing on Sizey's six nf-core traces, under the peers' protocol.

Each ``trace_*.csv`` in TRACES_DIR is imported as `scoutless import nextflow` does it and
sized as `scoutless size --protocol peers` sizes it: per task type ~30 % history and
70 % online (``train_test_split(test_size=0.7, random_state=seed)``), every attempt
accounted (excess × runtime; a failed attempt's whole allocation × runtime). For each
seed, scoutless's online sizer and the published baselines (Witt percentile and LR — std and
std-under as coded, with their shared error list, and each with its own — Tovar, the
users' presets, JEDI, VPA, Witt's low-wastage regression, the oracle); the goal compares
scoutless with the best of every online baseline (std-under without its look-ahead), per
workflow and seed, and over the workflow-seed cells gives the median ratio with a 95 %
bootstrap interval. ``--cold-seeds``: also size each workflow with none of its own
history (leave one out); ``--lwr-offline-seeds``: the low-wastage regression as published;
``--live-seeds``: the live protocol; ``--submission-seeds``: every method sized from what is
known before the run (``--features submission``) beside the main cells; ``--sensitivity-seeds``: scoutless over the constants'
grid, each workflow at the setting chosen on the other five, and over the failure penalties
of the trade-off curve, each cell asked whether the curve dominates every online baseline
(`sizing_constants.py`). The cold rows are compared with the best of every warm baseline;
the JSON states the seconds of each part (``seconds_by_part``).

``--resource walltime`` sizes run time instead (need ``realtime``, the request the trace's
``time``; wastage in core-hours: cores × (limit − run time) at the walltime-slack price
plus the killed attempts' core-hours), with the unit-agnostic baselines: the percentile,
the Witt-LR regressions, the users' requests. ``--features``: the input size the
regressions and the online sizer see — ``peers-rchar`` (default here: the peers' protocol, the
bytes read during the run, as their table was made) or ``submission`` (what is known at
release: nothing in these traces).

The traces are not in this repository: Sizey's (github.com/dos-group/sizey, ``data/``).
Cite: J. Bader et al., "Sizey: Memory-Efficient Execution of Scientific Workflow Tasks",
IEEE CLUSTER 2024.

    nice python benchmarks/sizing.py TRACES_DIR [--seeds 1996,2023,42] [--cold-seeds 1996]
        [--live-seeds …] [--sensitivity-seeds …] [--jobs 2] --out results/sizing.json
    nice python benchmarks/sizing.py TRACES_DIR --resource walltime --out results/sizing_walltime.json
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from peers_code import reference
from record import add_out, emit, reference_loop_s, write_json
from scoutless.config import Settings
from scoutless.sizing.instances import FEATURES, workflow_name
from scoutless.sizing.live import NoClock
from scoutless.sizing.report import WITT_LWR_CITED, median_interval, size_workflow
from scoutless.sizing.resources import RESOURCES
from scoutless.sizing.resources import resource as sized_resource
from scoutless.sources.nextflow import read_nextflow
from sizey_model import recount, sizey_model
from sizing_constants import leave_one_out, sensitivity_cell, trade_off

#: the seeds the headline is measured at (the peers' 1996, then nine more)
SEEDS = "1996,2023,42,7,12345,0,1,2,3,4"
#: the goal's ratio to the best baseline's wastage
GOAL_RATIO = 0.6


def _cell(kind: str, seed: int, name: str, cold: bool, offline: bool) -> dict[str, Any]:
    """One workflow at one seed (``FRAMES`` set before the pool forks): ``main`` every
    method under the peers' protocol; ``live`` under the live protocol (or why it could
    not run); ``submission`` every method from what is known before the run; ``sensitivity`` scoutless over the constants' grid and the trade-off curve's
    penalties. Each with the seconds it took."""
    start = time.perf_counter()
    frame, settings = FRAMES[name], Settings()
    how = {"settings": settings, "features": RUN["features"],
           "resource": sized_resource(RUN["resource"], settings)}  # fmt: skip
    if kind == "sensitivity":
        result: dict[str, Any] = sensitivity_cell(frame, name, seed, **how)
    elif kind in BESIDE:  # a variant of the main cell: its methods and goal only
        try:
            cell = size_workflow(frame, name, seed, **{**how, **BESIDE[kind]})
            result = {"methods": cell["methods"], "goal": cell["goal"]}
        except NoClock as exc:
            result = {"error": str(exc)}
    else:
        others = [f for n, f in FRAMES.items() if n != name] if cold else None
        result = size_workflow(frame, name, seed, cold_histories=others, offline_lwr=offline, **how)
        result.pop("task_types")
    result["seconds"] = round(time.perf_counter() - start, 1)
    print(
        f"{kind} seed {seed} {name}: {time.perf_counter() - start:.1f} s",
        file=sys.stderr,
        flush=True,
    )
    return result


def _seed_summary(workflows: dict[str, Any]) -> dict[str, Any]:
    ratios = [w["goal"]["scoutless"]["ratio"] for w in workflows.values()]
    summary = {
        "median_ratio": float(np.median(ratios)),
        "median_met": bool(np.median(ratios) <= GOAL_RATIO),
        "workflows_goal_met": sum(
            w["goal"]["scoutless"]["ratio"] <= GOAL_RATIO and w["goal"]["scoutless"]["failures_met"]
            for w in workflows.values()
        ),
        "workflows_met": sum(
            w["goal"]["scoutless"]["wastage_met"] and w["goal"]["scoutless"]["failures_met"]
            for w in workflows.values()
        ),
        "seconds": round(sum(w["seconds"] for w in workflows.values()), 1),
    }
    cold = [
        w["goal"]["scoutless_cold"] for w in workflows.values() if "scoutless_cold" in w["goal"]
    ]
    if cold:
        summary["cold_wastage_met"] = sum(bool(g["wastage_met"]) for g in cold)
        summary["cold_failures_met"] = sum(bool(g["failures_met"]) for g in cold)
    return summary


def over_cells(runs: dict[str, Any]) -> dict[str, Any]:
    """Every workflow-seed cell's ratio and best baseline, and over the cells the median
    ratio with its 95 % bootstrap interval and the share where scoutless is at or below
    the best baseline's wastage (and failures); the cold cells against the same best."""
    cells = [
        {"seed": int(seed), "workflow": wf, "ratio": w["goal"]["scoutless"]["ratio"],
         "best_baseline": w["goal"]["scoutless"]["best_baseline"],
         "wastage_met": w["goal"]["scoutless"]["wastage_met"],
         "failures_met": w["goal"]["scoutless"]["failures_met"]}
        for seed, run in runs.items() for wf, w in run["workflows"].items()
    ]  # fmt: skip
    if not cells:
        return {"cells": []}
    n = len(cells)
    cold = [
        {"seed": int(seed), "workflow": wf, **{k: g[k] for k in (
            "ratio", "best_baseline", "wastage_met", "failures_met")}}
        for seed, run in runs.items() for wf, w in run["workflows"].items()
        if (g := w["goal"].get("scoutless_cold"))
    ]  # fmt: skip
    live, submission = (
        [w["goal"]["scoutless"]["ratio"] for run in runs.values()
         for w in (run.get(part) or {}).values() if "goal" in w]
        for part in ("live", "submission")
    )  # fmt: skip
    return {
        "cells": cells, "count": n,
        "live": {"cells": len(live), "median_ratio": median_interval(live)} if live else {},
        "submission": {"cells": len(submission), "median_ratio": median_interval(submission)}
        if submission else {},
        "median_ratio": median_interval([c["ratio"] for c in cells]),
        "wastage_met_share": sum(c["wastage_met"] for c in cells) / n,
        "failures_met_share": sum(c["failures_met"] for c in cells) / n,
        "cold": {"cells": cold, "wastage_met": sum(c["wastage_met"] for c in cold),
                 "failures_met": sum(c["failures_met"] for c in cold)} if cold else {},
    }  # fmt: skip


FRAMES: dict[str, Any] = {}
#: the parts sized beside the main cells, each as the keywords it changes (a trace with no
#: submission or completion times cannot be walked live: its cells say why)
BESIDE: dict[str, dict[str, str]] = {"live": {"protocol": "live"},
                                     "submission": {"features": "submission"}}  # fmt: skip
#: the resource and features option every cell is sized with (set before the pool forks)
RUN: dict[str, str] = {"resource": "memory", "features": "peers-rchar"}
#: where each kind of cell goes in a seed's run
KINDS = {"main": "workflows", "live": "live", "submission": "submission",
         "sensitivity": "sensitivity"}  # fmt: skip


def _document(frames, seeds, runs, start) -> dict[str, Any]:
    for run in runs.values():
        run["summary"] = _seed_summary(run["workflows"]) if run["workflows"] else {}
    parts = {kind: round(sum(cell.get("seconds", 0.0) for run in runs.values()
                             for cell in (run.get(key) or {}).values()), 1)
             for kind, key in KINDS.items()}  # fmt: skip
    return {
        "resource": RUN["resource"],
        "features": RUN["features"],
        "traces": {n: len(f) for n, f in frames.items()},
        "seeds": seeds,
        "complete": all(
            len(runs.get(str(s), {}).get("workflows", {})) == len(frames) for s in seeds
        ),
        "runs": runs,
        "over_cells": over_cells(runs),
        "constants": leave_one_out(runs, sized_resource(RUN["resource"], Settings()).unit),
        "trade_off": trade_off(
            runs, Settings().sizing.prior_weight, sized_resource(RUN["resource"], Settings())
        ),
        "witt_lwr_cited": {
            k: {"wastage_gbh": v[0], "failures": v[1]} for k, v in WITT_LWR_CITED.items()
        }
        if RUN["resource"] == "memory"
        else {},
        "seconds": round(time.perf_counter() - start, 1),
        "seconds_by_part": parts,
        "peak_memory_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", type=Path, help="folder of trace_*.csv (Sizey's data/)")
    parser.add_argument("--seeds", default=SEEDS)
    parser.add_argument("--cold-seeds", help="seeds also sized cold ('' none; memory: 1996)")
    parser.add_argument("--workflows", help="only these workflows (default: every trace_*.csv)")
    parser.add_argument("--resource", choices=RESOURCES, default="memory")
    parser.add_argument("--features", choices=tuple(FEATURES), default="peers-rchar")
    parser.add_argument("--lwr-offline-seeds", default="1996",
                        help="seeds LWR also runs as published, offline ('' none)")  # fmt: skip
    parser.add_argument("--live-seeds", default="1996,2023,42",
                        help="seeds also sized under the live protocol ('' none)")  # fmt: skip
    parser.add_argument("--submission-seeds", default="1996,2023,42",
                        help="seeds also sized from what is known before the run ('' none)")  # fmt: skip
    parser.add_argument("--sensitivity-seeds", default="1996,2023,42",
                        help="seeds scoutless runs over the constants' grid ('' none)")  # fmt: skip
    parser.add_argument(
        "--peers-code",
        type=Path,
        help="a checkout of dos-group/sizey: run its baselines as the reference",
    )
    parser.add_argument(
        "--peers-python",
        default="python3",
        help="the Python --peers-code runs with (pandas < 3, scikit-learn, "
        "scipy, statsmodels, matplotlib)",
    )
    parser.add_argument("--peers-seeds", default="1996", help="seeds --peers-code runs at")
    parser.add_argument(
        "--peers-against",
        type=Path,
        help="with --peers-code: compare with this sizing JSON's cells, size nothing",
    )
    parser.add_argument(
        "--sizey-model",
        type=int,
        default=0,
        help="with --peers-code and --peers-against: Sizey's own model on the first N "
        "online instances of every type (its seed: the first of --peers-seeds)",
    )
    parser.add_argument("--sizey-collect", action="store_true",
                        help="with --sizey-model: read what its run wrote so far, run nothing")  # fmt: skip
    parser.add_argument("--sizey-workflows", default="iwd,methylseq", help="workflows --sizey-model sizes")
    parser.add_argument("--sizey-recount", type=Path, metavar="JSON",
                        help="with --peers-against: JSON's sizey_model block, this project's "
                        "methods counted again at this commit, the model's figures carried")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1, help="cells sized in parallel")
    add_out(parser)
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    loop_before = reference_loop_s()
    start = time.perf_counter()
    peers_seeds = [int(s) for s in args.peers_seeds.split(",") if s]
    if args.peers_against and (args.peers_code or args.sizey_recount):  # against a run made
        emit(_against(args, peers_seeds), args.out, loop_before)
        return
    paths = sorted(args.traces.glob("trace_*.csv"))
    if args.workflows:
        paths = [p for p in paths if workflow_name(p) in args.workflows.split(",")]
    if not paths:
        parser.error(f"{args.traces}: no trace_*.csv")
    sizing = Settings().sizing
    FRAMES.update({workflow_name(p): read_nextflow([p], settings=sizing).frame for p in paths})
    RUN.update(resource=args.resource, features=args.features)
    cold_seeds = args.cold_seeds if args.cold_seeds is not None else (
        "1996" if args.resource == "memory" else "")  # fmt: skip
    cold = {int(s) for s in cold_seeds.split(",") if s}
    offline = {int(s) for s in args.lwr_offline_seeds.split(",") if s}
    seeds = [int(s) for s in args.seeds.split(",")]
    runs: dict[str, Any] = {}
    live = [int(s) for s in args.live_seeds.split(",") if s]
    sens = [int(s) for s in args.sensitivity_seeds.split(",") if s]
    submission = [int(s) for s in args.submission_seeds.split(",") if s]
    if args.features == "submission":
        submission = []  # the main cells are those already
    jobs = [
        (kind, s, n, s in cold, s in offline)
        for kind, ss in (
            ("main", seeds),
            ("live", live),
            ("submission", submission),
            ("sensitivity", sens),
        )
        for s in ss
        for n in FRAMES
    ]
    with ProcessPoolExecutor(args.jobs, mp_context=get_context("fork")) as pool:
        futures = {pool.submit(_cell, *job): job for job in jobs}  # the headline's cells first
        for done in as_completed(futures):
            kind, seed, name = futures[done][:3]
            run = runs.setdefault(str(seed), {"workflows": {}})
            run.setdefault(KINDS[kind], {})[name] = done.result()
            if args.out:  # what finished so far, should the run be cut short
                write_json(args.out, _document(FRAMES, seeds, _ordered(runs, seeds), start))
    document = _document(FRAMES, seeds, _ordered(runs, seeds), start)
    if args.peers_code:
        document["peers_code"] = reference(
            args.peers_code, args.peers_python, document["runs"], sorted(FRAMES), peers_seeds
        )
    emit(document, args.out, loop_before)


def _against(args: argparse.Namespace, peers_seeds: list[int]) -> dict[str, Any]:
    """The peers' code against a sizing JSON already made (its baselines, or Sizey's model
    on the first instances), the comparison also stored in that JSON for its results page."""
    against = json.loads(args.peers_against.read_text())
    def frames(names: list[str]) -> dict[str, Any]:
        settings = Settings().sizing
        return {wf: read_nextflow([args.traces / f"trace_{wf}.csv"], settings=settings).frame
                for wf in names}  # fmt: skip

    if args.sizey_recount:
        block = json.loads(args.sizey_recount.read_text())["sizey_model"]
        key, result = "sizey_model", recount(block, frames(list(block["workflows"])),
                                             str(args.sizey_recount))  # fmt: skip
    elif args.sizey_model:
        keep = (lambda r: write_json(args.out, r)) if args.out else None
        key, result = "sizey_model", sizey_model(
            args.peers_code, args.peers_python, frames(args.sizey_workflows.split(",")),
            peers_seeds[0], args.sizey_model, keep,
            collect=args.sizey_collect,
        )
    else:
        runs = against["runs"]
        flows = sorted({wf for r in runs.values() for wf in r["workflows"]})
        key, result = "peers_code", reference(
            args.peers_code, args.peers_python, runs, flows, peers_seeds, args.out
        )
    result["against"] = str(args.peers_against)
    for run in against["runs"].values():  # the hand-copied table it replaces
        run.pop("reproduction", None)
    write_json(args.peers_against, against | {key: result})
    return result


def _ordered(runs: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    return {
        str(s): {k: dict(sorted(v.items())) for k, v in runs[str(s)].items()}
        for s in seeds if str(s) in runs
    }  # fmt: skip


if __name__ == "__main__":
    main()
