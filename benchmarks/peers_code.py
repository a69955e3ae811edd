"""The peers' own code as the reference, for `sizing.py --peers-code DIR`: Sizey's
``main.py`` (a checkout of github.com/dos-group/sizey) run on the same traces and seeds in
its own Python (it needs pandas < 3), its only change a switch that skips Sizey's own
model (``SIZEY_SKIP_MODEL=1``: its loop over the model's strategies runs over none), and
every baseline cell it writes compared with this project's: wastage to `TOLERANCE`
relative, failures equal. Its offline low-wastage regression (``Witt-Ice``) is compared
beside, not in the verdict: its COBYLA is the SciPy of that Python."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from record import write_json

#: the largest relative gap in GB·h a reproduced cell may have
TOLERANCE = 1e-9
#: the loop over Sizey's strategies in ``main.py``, and the switch that empties it
LOOP = "    for error_strat in ERROR_STRATEGY:"
SWITCHED = ("    for error_strat in ([] if __import__('os').environ.get('SIZEY_SKIP_MODEL') == '1'"
            " else ERROR_STRATEGY):")  # fmt: skip
#: the offline low-wastage regression's call, and the switch that skips it (where this
#: project ran no offline regression to compare it with: it takes minutes a workflow)
LWR_CALL = "\nmain_witt_wastage(wf_name,"
LWR_SWITCHED = "\nif __import__('os').environ.get('SIZEY_SKIP_LWR') != '1': main_witt_wastage(wf_name,"
#: (Method, Offset_Strategy) in the peers' results → this project's method
METHODS = {
    ("Witt-LR", "STD"): "witt_lr_std", ("Witt-LR", "STDUNDER"): "witt_lr_std_under",
    ("Tovar", "Default"): "tovar", ("Witt-Percentile", "Default"): "witt_percentile",
    ("Workflow-Presets", "Default"): "users_presets", ("Witt-Ice", "Default"): "witt_lwr_offline",
}  # fmt: skip
#: the arguments ``main.py`` takes after the trace (alpha, softmax, error metric): they
#: name its results file only, the baselines ignore them
ARGS = ("0.0", "False", "smoothed_mape")


def executable(python: str) -> str:
    """``python`` as the peers' code runs it from its own folder: a path made absolute
    (not resolved: a venv's interpreter is a link), a bare command name kept."""
    return str(Path(python).absolute()) if os.sep in python else python


def prepare(checkout: Path, work: Path) -> Path:
    """A copy of the checkout with the switches in ``main.py`` (Sizey's model; the offline
    regression) and an empty ``results/``.

    Raises ValueError when ``main.py`` lacks a line a switch replaces."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(checkout, work, ignore=shutil.ignore_patterns(".git", "results"))
    main = (work / "main.py").read_text()
    for old in (LOOP, LWR_CALL):
        if main.count(old) != 1:
            raise ValueError(f"{checkout}/main.py: no line {old.strip()!r} to switch")
    (work / "main.py").write_text(main.replace(LOOP, SWITCHED).replace(LWR_CALL, LWR_SWITCHED))
    (work / "results").mkdir()
    return work


def run_peers(
    work: Path, python: str, workflows: list[str], seeds: list[int],
    offline: set[tuple[str, str]] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Per seed and workflow, each method's GB·h and failures as the peers' code writes
    them; its offline regression only at the (seed, workflow) pairs in ``offline`` (all
    when None)."""
    out: dict[str, Any] = {}
    for seed in seeds:
        for wf in workflows:
            lwr = offline is None or (str(seed), wf) in offline
            env = {**os.environ, "SIZEY_SKIP_MODEL": "1", "SIZEY_SKIP_LWR": "0" if lwr else "1"}
            cmd = [executable(python), "main.py", f"./data/trace_{wf}.csv", *ARGS, str(seed)]
            subprocess.run(cmd, cwd=work, env=env, check=True, capture_output=True)
            path = work / "results" / f"results_sizey_{wf}_{'_'.join(ARGS)}_{seed}.csv"
            cells: dict[str, dict[str, float]] = {}
            with path.open(newline="") as f:
                for row in csv.DictReader(f):
                    method = METHODS.get((row["Method"], row["Offset_Strategy"]))
                    if method is None:
                        continue
                    cell = cells.setdefault(method, {"wastage_gbh": 0.0, "failures": 0})
                    cell["wastage_gbh"] += float(row["Wastage_GBh"])
                    cell["failures"] += int(float(row["Failures"]))
            out.setdefault(str(seed), {})[wf] = cells
            print(f"peers' code seed {seed} {wf}", file=sys.stderr, flush=True)
    return out


def compare(runs: dict[str, Any], peers: dict[str, Any]) -> dict[str, Any]:
    """Every cell the peers' code wrote against this project's: relative gap, failures."""
    cells, offline = {}, {}
    for seed, flows in peers.items():
        for wf, methods in flows.items():
            ours_wf = runs.get(seed, {}).get("workflows", {}).get(wf)
            if ours_wf is None:
                continue
            for method, theirs in methods.items():
                off = method == "witt_lwr_offline"
                ours = (ours_wf.get("offline", {}).get("witt_lwr") if off
                        else ours_wf["methods"].get(method))  # fmt: skip
                if ours is None:
                    continue
                gap = abs(ours["wastage_gbh"] - theirs["wastage_gbh"]) / max(abs(theirs["wastage_gbh"]), 1e-300)
                cell = {"ours": ours["wastage_gbh"], "theirs": theirs["wastage_gbh"], "gap": gap,
                        "failures": [ours["failures"], theirs["failures"]]}  # fmt: skip
                (offline if off else cells)[f"{seed}/{wf}/{method}"] = cell
    worst = max(cells, key=lambda k: cells[k]["gap"]) if cells else None
    equal = all(c["failures"][0] == c["failures"][1] for c in cells.values())
    return {
        "tolerance": TOLERANCE, "cells": cells, "worst_cell": worst,
        "max_gap": cells[worst]["gap"] if worst else None, "failures_equal": equal,
        "met": bool(cells) and equal and all(c["gap"] <= TOLERANCE for c in cells.values()),
        "witt_lwr_offline": offline,
    }  # fmt: skip


def written(out: Path | None) -> dict[str, Any]:
    """The peers' figures a comparison already written to ``out`` holds, per seed,
    workflow and method (what `run_peers` returns): an interrupted or partial run is
    resumed, not repeated (the peers' code takes minutes to hours a workflow)."""
    if out is None or not out.exists():
        return {}
    earlier = json.loads(out.read_text())
    peers: dict[str, Any] = {}
    for part in ("cells", "witt_lwr_offline"):
        for key, cell in earlier.get(part, {}).items():
            seed, wf, method = key.split("/")
            theirs = {"wastage_gbh": cell["theirs"], "failures": cell["failures"][1]}
            peers.setdefault(seed, {}).setdefault(wf, {})[method] = theirs
    for seed in peers:  # a workflow listed as done with no comparable cell stays done
        for wf in earlier.get("workflows", []):
            peers[seed].setdefault(wf, {})
    return peers


def reference(
    checkout: Path, python: str, runs: dict[str, Any], workflows: list[str], seeds: list[int],
    out: Path | None = None,
) -> dict[str, Any]:
    """The peers' code on ``workflows`` at ``seeds`` compared with ``runs`` (a sizing
    JSON's), the comparison rewritten to ``out`` as each workflow at each seed ends; what
    ``out`` already holds is taken from it, not run again."""
    start = time.perf_counter()
    peers = written(out)
    earlier_s = json.loads(out.read_text()).get("seconds", 0.0) if peers else 0.0
    missing = {wf: [s for s in seeds if wf not in peers.get(str(s), {})] for wf in workflows}
    todo = [wf for wf in workflows if missing[wf]]
    work = prepare(checkout, Path(tempfile.mkdtemp()) / "sizey") if todo else checkout
    offline = {(seed, wf) for seed, run in runs.items()
               for wf, cell in run.get("workflows", {}).items() if cell.get("offline")}  # fmt: skip
    result = compare(runs, peers) | {"workflows": sorted({w for f in peers.values() for w in f}),
                                     "seeds": sorted(peers, key=int), "seconds": earlier_s}  # fmt: skip
    for wf, seed in [(w, s) for w in todo for s in missing[w]]:  # written as each ends
        for key, flows in run_peers(work, python, [wf], [seed], offline).items():
            peers.setdefault(key, {}).update(flows)
        done = sorted({w for f in peers.values() for w in f})
        seconds = round(earlier_s + time.perf_counter() - start, 1)
        result = compare(runs, peers) | {"workflows": done, "seeds": sorted(peers, key=int),
                                         "seconds": seconds}  # fmt: skip
        if out is not None:
            write_json(out, result)
    return result
