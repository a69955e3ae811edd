"""The decision's speed, paired: two checkouts (``--before``, ``--after``: each a source tree
with ``src/scoutless``) measured on one machine in interleaved runs (A B, then B A, …), each
run a fresh process of its side's code on the same small demo; prints JSON.

Per run: the service's CPU per request (process CPU time over ``--requests`` requests to an
in-process app, after a warm-up, by id ``GET /v1/tasks/{id}/prediction`` and posted ``POST
/v1/predict``, one task each, under the cost policy) and the replay's time (wall and CPU) of
the demo's test tasks through every strategy (its CPU: the process's and its strategy
workers'). Per pair, after ÷ before; the result gives each ratio's median and its spread
over the pairs (min, max).

    python benchmarks/decision_speed.py --before /work/wt-before --after . \\
        --workdir /tmp/speed --tasks 2000 --rounds 4 --out results/decision_speed.json

The demo (``scoutless demo --models xgb``) is built once by the ``--after`` side; the
``--before`` side reads the same bundle (files it does not know it leaves alone).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from record import add_out, emit, reference_loop_s

#: what a run measures: the service's CPU ms per request (by id, posted), the replay's s
FIGURES = ("service_cpu_ms_by_id", "service_cpu_ms_posted", "replay_wall_s", "replay_cpu_s")


def child(workdir: Path, requests: int) -> dict[str, float]:
    """One run in this process, with the ``scoutless`` on its path (its side's)."""
    import pandas as pd
    from fastapi.testclient import TestClient

    from scoutless.config import Settings
    from scoutless.service.app import create_app

    table = pd.read_parquet(workdir / "table.parquet", columns=["jeditaskid", "split_random"])
    ids = sorted(table.loc[table["split_random"] == "test", "jeditaskid"].astype(int).tolist())
    db_url = f"sqlite:///{workdir / 'history.sqlite'}"
    settings = Settings()
    app = create_app(workdir / "bundle", db_url=db_url, settings=settings, log_predictions=False)
    out: dict[str, float] = {}
    with TestClient(app, client=("127.0.0.1", 50000), base_url="http://127.0.0.1") as client:
        get = lambda i: client.get(f"/v1/tasks/{i}/prediction", params={"policy": "cost"})  # noqa: E731
        for i in ids[:40]:  # warm-up
            get(i)
        posted = [{"taskparams": [task], "policy": "cost"} for task in _posted(workdir, ids[:20])]
        for body in posted:
            client.post("/v1/predict", json=body)
        out["service_cpu_ms_by_id"] = _cpu_ms(lambda k: get(ids[k % len(ids)]), requests)
        out["service_cpu_ms_posted"] = _cpu_ms(
            lambda k: client.post("/v1/predict", json=posted[k % len(posted)]), requests
        )
    out.update(_replay(workdir, settings, ids))
    return out


def _posted(workdir: Path, ids: list[int]) -> list[dict[str, Any]]:
    """The tasks' stored parameters with the input counts JEDI adds (as a submitter posts;
    benchmarks/parity.py's)."""
    import sqlite3

    import pandas as pd

    counts = ["n_input_datasets", "input_nfiles", "input_nevents"]
    frame = pd.read_parquet(workdir / "table.parquet", columns=["jeditaskid", *counts])
    frame = frame.set_index("jeditaskid")
    with sqlite3.connect(workdir / "history.sqlite") as con:
        stored = dict(con.execute("SELECT jeditaskid, taskparams FROM jedi_taskparams"))
    return [json.loads(stored[i]) | {k: float(v) for k, v in frame.loc[i, counts].items() if v == v}
            for i in ids]  # fmt: skip


def _cpu_ms(call: Any, n: int) -> float:
    started = time.process_time()
    for k in range(n):
        call(k)
    return (time.process_time() - started) / n * 1000.0


def _replay(workdir: Path, settings: Any, ids: list[int]) -> dict[str, float]:
    """The replay of the demo's test tasks through every strategy (as ``scoutless demo``)."""
    import tempfile

    import numpy as np

    from scoutless.bundle import load_bundle
    from scoutless.cli.data import synthetic_values
    from scoutless.replay.runner import replay_history

    predictor = load_bundle(workdir / "bundle")
    with tempfile.TemporaryDirectory() as out:
        wall, cpu = time.perf_counter(), _cpu_s()
        replay_history(f"sqlite:///{workdir / 'history.sqlite'}", predictor, Path(out), settings,
                       seed=42, only=np.asarray(ids), read_truth=synthetic_values)  # fmt: skip
        return {"replay_wall_s": time.perf_counter() - wall, "replay_cpu_s": _cpu_s() - cpu}


def _cpu_s() -> float:
    """This process's CPU and its finished children's (the strategies' worker processes)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_side(tree: Path, workdir: Path, requests: int) -> dict[str, float]:
    """:func:`child` in a fresh process on ``tree``'s sources."""
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{Path(__file__).parent}"}
    command = [sys.executable, __file__, "--child", str(workdir), "--requests", str(requests)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{tree}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def demo(after: Path, workdir: Path, tasks: int) -> None:
    """The small demo both sides read, built by ``after``'s code (once)."""
    if (workdir / "bundle").is_dir():
        return
    env = {**os.environ, "PYTHONPATH": str(after / "src")}
    command = ("from scoutless.cli.main import main; main()", "demo", "--workdir", str(workdir),
               "--tasks", str(tasks), "--models", "xgb")  # fmt: skip
    subprocess.run([sys.executable, "-c", *command], env=env, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip


def paired(before: Path, after: Path, workdir: Path, rounds: int, requests: int) -> dict:
    """``rounds`` pairs, the order alternating (A B, B A, …); per figure each pair's ratio."""
    runs = []
    for r in range(rounds):
        order = [("before", before), ("after", after)]
        pair = dict((name, run_side(tree, workdir, requests)) for name, tree in
                    (order if r % 2 == 0 else order[::-1]))  # fmt: skip
        runs.append(pair)
    ratios = {}
    for figure in FIGURES:
        each = [p["after"][figure] / p["before"][figure] for p in runs]
        ratios[figure] = {"median": statistics.median(each), "min": min(each), "max": max(each),
                          "pairs": each}  # fmt: skip
    means = {side: {f: statistics.mean(p[side][f] for p in runs) for f in FIGURES}
             for side in ("before", "after")}  # fmt: skip
    return {"rounds": rounds, "requests": requests, "ratios_after_over_before": ratios,
            "means": means, "runs": runs}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--before", type=Path, help="the base's source tree")
    parser.add_argument("--after", type=Path, default=Path(__file__).parents[1])
    parser.add_argument("--workdir", type=Path, default=Path("scoutless-work/decision_speed"))
    parser.add_argument("--tasks", type=int, default=2000, help="the demo's tasks")
    parser.add_argument("--rounds", type=int, default=4, help="pairs of runs")
    parser.add_argument("--requests", type=int, default=200, help="requests timed per route")
    add_out(parser)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child.resolve(), args.requests)))
        return
    if args.before is None:
        parser.error("--before is required")
    loop_before = reference_loop_s()
    workdir = args.workdir.resolve()
    demo(args.after.resolve(), workdir, args.tasks)
    result = paired(args.before.resolve(), args.after.resolve(), workdir, args.rounds,
                    args.requests)  # fmt: skip
    emit({"benchmark": "decision_speed", "tasks": args.tasks, **result}, args.out, loop_before,
         indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
