"""A recorded stream of sized outcomes, driven through the persistent sizer by a process that
may be killed and restarted (the restart benchmark and the state store's tests use it).

The stream is fixed in advance (seeded): per event a task type, an instance's features and
its outcome — a success (the need) or a kill (a lower bound on it), as the listener reads
them from job-end messages. Per event the driver asks the allocation the sizer would give
the instance (``first``; for a kill also the ``retry`` after it), prints it, and learns the
outcome. A restarted driver resumes at the event after the last one acknowledged (the sum
of the types' versions), so its printed allocations line up with an uninterrupted run's.

    python benchmarks/sizing_stream.py --db sqlite:///x.sqlite --events 1000 [--rank 0 --ranks 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scoutless.config import SizingSettings, SizingStateSettings
from scoutless.sizing.contract_adapter import Features, Outcome
from scoutless.sizing.persistent import PersistentSizer

#: the sizer's settings the stream is driven with: the pooled prior rebuilt after every
#: outcome (a prior cached across outcomes depends on when it was asked for, which a
#: restarted process cannot know)
STREAM_SIZING = {"prior_refresh_share": 0.0}


@dataclass(frozen=True)
class Event:
    key: str
    features: Features
    outcome: Outcome


def stream(events: int, types: int = 8, seed: int = 0, kill_share: float = 0.1) -> list[Event]:
    """``events`` outcomes over ``types`` task types: a type's need a line in its input size
    (log scale) plus noise; ``kill_share`` of them kills at 30–95 % of the need."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(19.0, 22.0, types)  # log bytes: ~0.2–3.6 GB
    slope = rng.uniform(0.0, 0.6, types)
    kind = rng.integers(0, types, events)
    log_input = rng.normal(20.0, 1.5, events)
    need = np.exp(base[kind] + slope[kind] * (log_input - 20.0) + rng.normal(0, 0.3, events))
    killed = rng.random(events) < kill_share
    bound = need * rng.uniform(0.3, 0.95, events)
    runtime = rng.lognormal(7.0, 1.0, events)
    return [
        Event(
            key=f"type-{kind[i]:03d}",
            features=Features(
                input_size=float(np.exp(log_input[i])),
                cores=1.0,
                request=float(4 * np.exp(base[kind[i]])),
            ),
            outcome=Outcome(
                need=float(bound[i] if killed[i] else need[i]),
                runtime=float(runtime[i]),
                censored=bool(killed[i]),
            ),
        )
        for i in range(events)
    ]


def drive(sizer: PersistentSizer, events: list[Event], start: int) -> Iterator[tuple]:
    """Size and learn ``events[start:]``; per event (index, first, retry or NaN, seconds of
    first + retry, seconds of learn)."""
    for i in range(start, len(events)):
        e = events[i]
        t0 = time.perf_counter()
        first = sizer.first(e.key, e.features)
        retry = sizer.retry(e.key, e.features, e.outcome.need) if e.outcome.censored else np.nan
        t1 = time.perf_counter()
        sizer.learn(e.key, e.features, e.outcome)
        yield i, first, retry, t1 - t0, time.perf_counter() - t1


def open_sizer(db: str, sizing: dict, keep_outcomes: int = 0) -> PersistentSizer:
    return PersistentSizer.open(
        db,
        sizing=SizingSettings(**sizing),
        settings=SizingStateSettings(keep_outcomes=keep_outcomes),
    )


def spawn(db: str, events: int, *extra: str) -> subprocess.Popen:
    """This script in a new process on ``db`` (stdin and stdout piped, text)."""
    here = Path(__file__).resolve()
    path = os.pathsep.join([str(here.parents[1] / "src"), str(here.parent)])
    return subprocess.Popen(
        [sys.executable, str(here), "--db", db, "--events", str(events), *extra],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip


def run(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--types", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rank", type=int, default=0, help="this process takes events i with i %% ranks == rank"
    )
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--sizing", default="{}", help="JSON: SizingSettings fields")
    args = parser.parse_args(argv)
    events = stream(args.events, args.types, args.seed)
    sizer = open_sizer(args.db, {**STREAM_SIZING, **json.loads(args.sizing)})
    if args.ranks > 1:  # processes sharing one state: each its own share, from the start
        mine = [e for i, e in enumerate(events) if i % args.ranks == args.rank]
        print("ready", flush=True)
        sys.stdin.readline()  # all start together once every rank is ready (a line on stdin)
        for _ in drive(sizer, mine, 0):
            pass
        print(json.dumps({"rank": args.rank, "conflicts": sizer.conflicts}), flush=True)
        return
    sizing_s = learn_s = 0.0
    for i, first, retry, t_size, t_learn in drive(sizer, events, sizer.store.committed()):
        sizing_s, learn_s = sizing_s + t_size, learn_s + t_learn
        sys.stdout.write(f"{i} {float(first)!r} {float(retry)!r}\n")
        sys.stdout.flush()
    print(json.dumps({"sizing_s": sizing_s, "learn_s": learn_s}), flush=True)


if __name__ == "__main__":
    run()
