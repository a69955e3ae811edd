"""What the low-wastage regression's fit costs with SciPy's COBYLA as it is and without its
constraint work (`sizing.unconstrained_cobyla`), on the histories the online method fits
in one workflow at one seed: each fit run both ways in turn (so a shared machine's load
falls on both alike), the two ensembles compared for equality, seconds summed per way.
The fits kept by their inputs are bypassed: every fit is computed.

    nice python benchmarks/lwr_speed.py TRACES_DIR [--workflow iwd] [--seed 1996]
        --out results/lwr_speed.json
"""

from __future__ import annotations

import argparse
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from record import add_out, emit, reference_loop_s
from scoutless.config import Settings
from scoutless.sizing import lwr
from scoutless.sizing.protocol import task_types, walk
from scoutless.sizing.resources import MEMORY
from scoutless.sizing.unconstrained_cobyla import free_of_constraints
from scoutless.sources.nextflow import read_nextflow


def histories(traces: Path, workflow: str, seed: int) -> list[tuple[np.ndarray, ...]]:
    """Every (input size, need, runtime) history the online method fits on the workflow."""
    frame = read_nextflow([traces / f"trace_{workflow}.csv"], settings=Settings().sizing).frame
    seen: list[tuple[np.ndarray, ...]] = []

    class Recording(lwr.LowWastage):
        def _refit(self) -> None:
            seen.append((np.array(self.x), np.array(self.need), np.array(self.time)))
            super()._refit()

    for task in task_types(frame, seed, workflow, MEMORY, "peers-rchar"):
        walk(Recording(), task)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", type=Path, help="folder of trace_*.csv (Sizey's data/)")
    parser.add_argument("--workflow", default="iwd")
    parser.add_argument("--seed", type=int, default=1996)
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    fits = histories(args.traces, args.workflow, args.seed)
    seconds = {"scipy": 0.0, "without_constraint_work": 0.0}
    equal = True
    for x, need, runtime in fits:
        answers = []
        for way, block in (
            ("scipy", nullcontext),
            ("without_constraint_work", free_of_constraints),
        ):
            start = time.perf_counter()
            with block():
                answers.append(lwr._fit(x, need, runtime))
            seconds[way] += time.perf_counter() - start
        equal &= answers[0] == answers[1]
    emit({
        "workflow": args.workflow, "seed": args.seed, "fits": len(fits),
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
        "speedup": round(seconds["scipy"] / seconds["without_constraint_work"], 2),
        "identical": bool(equal),
    }, args.out, loop_before)  # fmt: skip


if __name__ == "__main__":
    main()
