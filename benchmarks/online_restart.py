"""The online sizer's state across restarts: a recorded stream of outcomes learnt through the
persistent sizer on SQLite, its process SIGKILLed at random points and restarted from the
database each time, against an uninterrupted run of the same stream; and what keeping the
state in the database costs per learn and per allocation, beside the in-memory sizer.

The kills are chained in one stream: the process is killed at the first point, restarted,
killed at the next, and so on, so one run covers every point at the cost of two streams.
Each restart resumes at the event after the last outcome acknowledged; every allocation any
process printed for an event must equal the uninterrupted run's, bit for bit. The stream
and the driver are `sizing_stream.py`'s.

    nice python benchmarks/online_restart.py --outcomes 100000 --types 100 --kills 10 \\
        --out results/online_restart.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from typing import Any

import numpy as np

from online import commit
from record import add_out, emit, reference_loop_s
from scoutless.config import SizingSettings
from scoutless.history.panda_db import make_engine
from scoutless.sizing.contract_adapter import ContractSizer
from scoutless.sizing.state_store import SizingStateStore, dumps, state_metadata
from sizing_stream import STREAM_SIZING, spawn, stream

Reports = dict[int, set[tuple[str, str]]]


def run_with_kills(
    db: str, args: argparse.Namespace, kill_at: list[int]
) -> tuple[Reports, dict, int]:
    """Drive the stream on ``db`` to its end, killing the process once it has printed each
    event of ``kill_at`` and starting a new one; what was printed per event, the last
    process's timing summary, and the restarts."""
    seen: Reports = {}
    points, restarts = sorted(kill_at), 0
    while True:
        child = spawn(db, args.outcomes, "--types", str(args.types), "--seed", str(args.seed))
        summary = _read_until_kill(child, seen, points)
        if summary is not None:
            return seen, summary, restarts
        restarts += 1


def _read_until_kill(child: subprocess.Popen, seen: Reports, points: list[int]) -> dict | None:
    """Record what ``child`` prints; kill it at the first of ``points`` it passes (None), or
    its timing summary once it finishes."""
    for line in child.stdout:
        if line.startswith("{"):
            child.wait()
            return json.loads(line)
        i, first, retry = line.split()
        seen.setdefault(int(i), set()).add((first, retry))
        if points and int(i) >= points[0]:
            child.kill()  # SIGKILL: no handler, no flush, mid-transaction or not
            child.wait()
            while points and points[0] <= int(i):
                points.pop(0)
            return None
    raise RuntimeError(f"the driver stopped with code {child.wait()} before the stream's end")


def in_memory_cost(args: argparse.Namespace) -> dict[str, float]:
    """Seconds per allocation and per learn of the in-memory sizer on the same stream."""
    sizer = ContractSizer(SizingSettings(**STREAM_SIZING))
    sizing_s = learn_s = 0.0
    for e in stream(args.outcomes, args.types, args.seed):
        t0 = time.perf_counter()
        sizer.first(e.key, e.features)
        if e.outcome.censored:
            sizer.retry(e.key, e.features, e.outcome.need)
        t1 = time.perf_counter()
        sizer.learn(e.key, e.features, e.outcome)
        sizing_s, learn_s = sizing_s + t1 - t0, learn_s + time.perf_counter() - t1
    return per_event(sizing_s, learn_s, args.outcomes)


def per_event(sizing_s: float, learn_s: float, events: int) -> dict[str, float]:
    return {"ms_per_allocation": 1e3 * sizing_s / events, "ms_per_learn": 1e3 * learn_s / events}


def stored_state(db: str) -> dict[str, float]:
    """What the database holds at the end: state bytes (snapshot text) and log rows."""
    store = SizingStateStore(make_engine(db))
    states = store.read()
    sizes = [len(dumps(snapshot)) for _, snapshot in states.values()]
    return {
        "types": len(states),
        "outcomes_committed": store.committed(),
        "state_bytes": int(sum(sizes)),
        "state_bytes_per_type_mean": float(np.mean(sizes)) if sizes else 0.0,
        "state_bytes_per_type_max": int(max(sizes, default=0)),
    }


def compare(reference: Reports, killed: Reports) -> dict[str, Any]:
    wanted = {i: next(iter(r)) for i, r in reference.items()}
    differ = [i for i, r in killed.items() if r != {wanted.get(i)}]
    return {
        "events_reported": len(killed),
        "events_reported_twice": sum(len(r) > 1 for r in killed.values()),
        "events_missing": len(set(wanted) - set(killed)),
        "mismatches": len(differ),
        "first_mismatch": min(differ, default=None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outcomes", type=int, default=100_000)
    parser.add_argument("--types", type=int, default=100)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pg", help="also time an uninterrupted run on this PostgreSQL URL")
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    measured = commit()  # before the run: what the processes import
    rng = np.random.default_rng(args.seed)
    kill_at = sorted(
        rng.choice(np.arange(1, args.outcomes - 1), args.kills, replace=False).tolist()
    )
    with tempfile.TemporaryDirectory() as tmp:
        ref_db, killed_db = f"sqlite:///{tmp}/reference.sqlite", f"sqlite:///{tmp}/killed.sqlite"
        reference, ref_summary, _ = run_with_kills(ref_db, args, [])
        killed, _, restarts = run_with_kills(killed_db, args, kill_at)
        result: dict[str, Any] = {
            "commit": measured, "outcomes": args.outcomes, "types": args.types, "seed": args.seed,
            "sizer": "scoutless.sizing.contract_adapter.ContractSizer (sizing.online.OnlineSizer)",
            "kill_points": kill_at, "restarts": restarts, **compare(reference, killed),
            "sqlite": per_event(ref_summary["sizing_s"], ref_summary["learn_s"], args.outcomes),
            "stored": stored_state(ref_db),
        }  # fmt: skip
        result["identical"] = result["mismatches"] == 0 and result["events_missing"] == 0
    result["memory"] = in_memory_cost(args)
    if args.pg:
        result["postgresql"] = pg_cost(args)
    for backend in ("sqlite", "postgresql"):
        if backend in result:
            result[backend]["ms_per_learn_over_memory"] = (
                result[backend]["ms_per_learn"] - result["memory"]["ms_per_learn"]
            )
    emit(result, args.out, loop_before)


def pg_cost(args: argparse.Namespace) -> dict[str, float]:
    """An uninterrupted run's cost per event on PostgreSQL (the tables dropped before and after)."""
    engine = make_engine(args.pg)
    state_metadata.drop_all(engine)
    try:
        _, summary, _ = run_with_kills(args.pg, args, [])
    finally:
        state_metadata.drop_all(engine)
    return per_event(summary["sizing_s"], summary["learn_s"], args.outcomes)


if __name__ == "__main__":
    main()
