"""Sizey's own model, run by its code, beside every method on exactly the instances it sized,
for `sizing.py --peers-code DIR --sizey-model N`.

Sizey's model takes ~12–45 s an instance (its ensemble is refitted with a grid search at
every step), so the whole traces would take days: it sizes the first ``N`` online instances
of every task type (``train_test_split``'s order, as every method walks them) of the
workflows asked, the rest of its ``main.py`` unchanged. The baselines its ``main.py`` runs
beside write their per-instance rows too: their first ``N`` per type are compared with this
project's on the same instances (a cross-check of the cut), and every method this project
runs (scoutless, the baselines, the oracle) is summed over exactly those instances. Its
offline low-wastage regression is switched off in this run (another split: not the same
instances). A run cut short resumes: ``main.py`` skips the task types its results file
already holds, and the work folder is kept.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from peers_code import LWR_CALL, LWR_SWITCHED, METHODS, TOLERANCE, executable
from scoutless.config import Settings
from scoutless.sizing.protocol import Tally, TaskType, charge, task_types
from scoutless.sizing.resources import MEMORY
from scoutless.sizing.run import baseline_sizers, has_requests, run_types, users_presets, warm_sizer

#: the arguments Sizey's model runs with: its README's example (alpha 0, interpolation on,
#: smoothed MAPE)
MODEL_ARGS = ("0.0", "True", "smoothed_mape")
#: the model's call in ``main.py`` (its test data) and the same call on the first
#: ``SIZEY_FIRST`` online instances of the type
MODEL_CALL = (
    "sizey, X_test,\n                                                 "
    "y_test, runtime_test, user_estimates_test,"
)
FIRST_CALL = (
    "sizey, *(v.iloc[:int(__import__('os').environ.get('SIZEY_FIRST', len(v)))]"
    " for v in (X_test, y_test, runtime_test, user_estimates_test)),"
)
#: (Method, Error_Strategy, Offset_Strategy) of Sizey's model in its results
SIZEY = ("Sizey", "MAX_EVER_OBSERVED", "DYNAMIC")


def prepare_model(checkout: Path, work: Path) -> Path:
    """A copy of the checkout whose ``main.py`` sizes the first ``SIZEY_FIRST`` instances
    with Sizey's model and skips the offline regression on ``SIZEY_SKIP_LWR``; an existing
    ``work`` is kept (its results resume the run).

    Raises ValueError when ``main.py`` lacks a call the switches replace."""
    if (work / "main.py").exists():
        return work
    staging = work.with_name(work.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(checkout, staging, ignore=shutil.ignore_patterns(".git", "results"))
    main = (staging / "main.py").read_text()
    for old in (MODEL_CALL, LWR_CALL):
        if main.count(old) != 1:
            raise ValueError(f"{checkout}/main.py: not one {old.strip()!r} to switch")
    main = main.replace(MODEL_CALL, FIRST_CALL).replace(LWR_CALL, LWR_SWITCHED)
    (staging / "main.py").write_text(main)
    (staging / "results").mkdir()
    staging.rename(work)
    return work


def run_model(work: Path, python: str, workflow: str, seed: int, first: int) -> Path:
    """Sizey's ``main.py`` with its model on ``workflow`` at ``seed``: its per-instance
    results file (its printout goes to ``results/<workflow>.log`` in ``work``)."""
    env = {**os.environ, "SIZEY_FIRST": str(first), "SIZEY_SKIP_LWR": "1"}
    cmd = [executable(python), "main.py", f"./data/trace_{workflow}.csv", *MODEL_ARGS, str(seed)]
    with (work / "results" / f"{workflow}.log").open("a") as log:
        subprocess.run(cmd, cwd=work, env=env, check=True, stdout=log, stderr=subprocess.STDOUT)
    return per_instance(work, workflow, seed)


def per_instance(work: Path, workflow: str, seed: int) -> Path:
    """Where ``main.py`` writes each instance's row (the model's and the baselines')."""
    return work / "results" / f"results_sizey_{workflow}_{'_'.join(MODEL_ARGS)}_{seed}_tasks.csv"


#: per task type and method, each of its first instances' (GB·h, failures)
Costs = dict[str, dict[str, list[tuple[float, int]]]]


def theirs_first(path: Path, first: int) -> Costs:
    """Per task type and method (this project's names; ``sizey`` for its model), the
    first ``first`` instances' GB·h and failures as the peers' per-instance rows have them."""
    out: Costs = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            key = (row["Method"], row["Error_Strategy"], row["Offset_Strategy"])
            method = (
                "sizey" if key == SIZEY else METHODS.get((row["Method"], row["Offset_Strategy"]))
            )
            if method is None or method == "witt_lwr_offline":
                continue
            costs = out.setdefault(row["Task_Name"], {}).setdefault(method, [])
            if len(costs) < first:
                costs.append((float(row["Wastage_GBh"]), int(float(row["Failures"]))))
    return out


def model_seconds(path: Path) -> dict[str, float]:
    """What Sizey's model took an instance, as its own rows time it (``Experimental_Time``:
    a prediction, its retries and the model's update)."""
    with path.open(newline="") as f:
        times = [float(r["Experimental_Time"]) for r in csv.DictReader(f)
                 if (r["Method"], r["Error_Strategy"], r["Offset_Strategy"]) == SIZEY]  # fmt: skip
    return {"instances": len(times), "total": float(np.sum(times)),
            "median": float(np.median(times)) if times else float("nan")}  # fmt: skip


def ours_first(frame: pd.DataFrame, workflow: str, seed: int, first: int) -> Costs:
    """Per task type and method, this project's GB·h and failures on each of the type's
    first ``first`` online instances, from the whole walk (a method's state carries across
    types as in the full run)."""
    settings = Settings()
    types = task_types(frame, seed, workflow, MEMORY, "peers-rchar")
    sizers = [*baseline_sizers(settings, MEMORY, requests=has_requests(types)),
              warm_sizer(types, settings.sizing, MEMORY)]  # fmt: skip
    attempts: dict[str, list[list[float]]] = {}
    run_types(types, sizers, MEMORY, attempts)
    out: Costs = {}
    start = 0
    for task in types:
        on, n = task.online, min(first, len(task.online))
        cells: dict[str, list[tuple[float, int]]] = {}
        for method, allocs in attempts.items():
            tallies = [charge(float(on.need[i]), float(on.runtime[i]), allocs[start + i], MEMORY,
                              float(on.cpus[i])) for i in range(n)]  # fmt: skip
            cells[method] = [_cost(t) for t in tallies]
        if has_requests(types):
            cells["users_presets"] = [_cost(users_presets(
                TaskType(task.workflow, task.name, task.history, on.take(np.array([i]))), MEMORY
            )) for i in range(n)]  # fmt: skip
        out[task.name] = cells
        start += len(on)
    return out


def _cost(tally: Tally) -> tuple[float, int]:
    cell = tally.summary(MEMORY)
    return float(cell["wastage_gbh"]), int(cell["failures"])


def _total(costs: list[tuple[float, int]]) -> dict[str, float]:
    return {"wastage_gbh": sum(c[0] for c in costs), "failures": sum(c[1] for c in costs),
            "instances": len(costs)}  # fmt: skip


def side_by_side(ours: Costs, theirs: Costs) -> dict[str, Any]:
    """Every method over the instances Sizey's model sized (per type its first k: a run cut
    short counts what it reached), the baselines both sides computed compared on them
    (relative gap in GB·h, failures equal); per type, each method's cell."""
    per_type: dict[str, dict[str, dict[str, float]]] = {}
    gaps: dict[str, float] = {}
    equal = True
    for task, methods in theirs.items():
        k = len(methods.get("sizey", []))
        if not k or task not in ours:
            continue
        cells = per_type[task] = {
            m: _total(c[:k]) for m, c in {**ours[task], "sizey": methods["sizey"]}.items()
        }
        for method in methods.keys() & ours[task].keys():
            mine, peer = cells[method], _total(methods[method][:k])
            gaps[f"{task}/{method}"] = abs(mine["wastage_gbh"] - peer["wastage_gbh"]) / max(
                abs(peer["wastage_gbh"]), 1e-300
            )
            equal &= mine["failures"] == peer["failures"]
    worst = max(gaps, key=gaps.get) if gaps else None
    return {
        **_summed(per_type),
        "cross_check": {"cells": len(gaps), "max_gap": gaps.get(worst), "worst_cell": worst,
                        "failures_equal": equal,
                        "met": bool(gaps) and equal and max(gaps.values()) <= TOLERANCE},
        "per_type": per_type,
    }  # fmt: skip


def _summed(per_type: dict[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Each method's cells summed over the types, and the methods least wasteful first."""
    totals: dict[str, dict[str, float]] = {}
    for cells in per_type.values():
        for method, cell in cells.items():
            total = totals.setdefault(method, dict.fromkeys(cell, 0))
            for key in total:
                total[key] += cell[key]
    return {"methods": totals, "ranking": sorted(totals, key=lambda m: totals[m]["wastage_gbh"])}


def sizey_model(
    checkout: Path, python: str, frames: dict[str, pd.DataFrame], seed: int, first: int,
    out_write: Any = None, *, collect: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """Sizey's model on the first ``first`` instances of every type of each workflow in
    ``frames`` at ``seed``, every method beside it on the same instances; ``out_write``
    (called with the result so far) keeps what is done should the run be cut short;
    ``collect``: run nothing, read what an earlier run (perhaps cut short) wrote."""
    start = time.perf_counter()
    work = prepare_model(
        checkout, Path(tempfile.gettempdir()) / f"scoutless-sizey-model-{seed}-{first}"
    )
    result: dict[str, Any] = {
        "seed": seed,
        "first": first,
        "args": list(MODEL_ARGS),
        "workflows": {},
    }
    with ThreadPoolExecutor(len(frames)) as pool:  # one process a workflow: the model is the cost
        job = (lambda wf: per_instance(work, wf, seed)) if collect else (
            lambda wf: run_model(work, python, wf, seed, first))  # fmt: skip
        runs = {pool.submit(job, wf): wf for wf in frames}
        for done in as_completed(runs):
            wf = runs[done]
            theirs, ours = (
                theirs_first(done.result(), first),
                ours_first(frames[wf], wf, seed, first),
            )
            cell = side_by_side(ours, theirs) | {"types": len(ours),
                                                 "model_seconds": model_seconds(done.result())}  # fmt: skip
            result["workflows"][wf] = cell
            result["seconds"] = round(time.perf_counter() - start, 1)
            print(f"sizey model {wf}: {result['seconds']} s", file=sys.stderr, flush=True)
            if out_write is not None:
                out_write(result)
    return result


def recount(block: dict[str, Any], frames: dict[str, pd.DataFrame], source: str) -> dict[str, Any]:
    """An earlier run's block (`sizey_model`'s result) with this project's methods counted
    again at this commit on the instances its model sized (per type the model's count):
    what an engine change needs without running the model again (hours). The model's own
    figures and the cross-check of the peers' baselines are carried from ``source``;
    ``recount.baselines_equal`` says whether every baseline's total came out as before
    (an engine change leaves them alone: the carried cross-check then still holds)."""
    start = time.perf_counter()
    out = {k: v for k, v in block.items() if k != "carried"}  # an older recount's words
    out["workflows"] = {}
    equal = True
    for wf, old in block["workflows"].items():
        ours = ours_first(frames[wf], wf, int(block["seed"]), int(block["first"]))
        per_type = {
            task: {m: _total(c[: int(cells["sizey"]["instances"])]) for m, c in ours[task].items()}
            | {"sizey": cells["sizey"]}
            for task, cells in old["per_type"].items()
        }
        summed = _summed(per_type)
        equal &= all(summed["methods"][m] == old["methods"][m] for m in old["methods"]
                     if m != "sizey" and not m.startswith("scoutless"))  # fmt: skip
        out["workflows"][wf] = dict(old, **summed, per_type=per_type)
    out["recount"] = {"from": source, "baselines_equal": bool(equal),
                      "seconds": round(time.perf_counter() - start, 1)}  # fmt: skip
    return out
