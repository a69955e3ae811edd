"""What rebuilding a type's residual samples on a schedule costs in wastage, and what it
saves in time: scoutless's online sizer on Sizey's six nf-core traces under the peers'
protocol (the ``scoutless`` row of `benchmarks/sizing.py`) with the samples rebuilt after
every outcome (``sample_refresh_share`` 0: the sizer before the schedule, allocation for
allocation) and with the default share; per workflow and seed the wastage, the failures,
the default's wastage over the every-outcome one's, and each walk's CPU seconds.

    nice python benchmarks/sizing_refresh.py TRACES_DIR --seeds 1996,2023,42 \\
        --out results/sizing_refresh.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from record import add_out, emit, reference_loop_s
from scoutless.config import SizingSettings
from scoutless.sizing.protocol import Tally, task_types, walk
from scoutless.sizing.run import warm_sizer
from sizing_cap import trace_frames

#: the goal: the default schedule's wastage within 2 % of the every-outcome sizer's
GAP = 0.02


def cell(frame: Any, name: str, seed: int, settings: SizingSettings) -> dict[str, Any]:
    """The warm sizer's wastage and failures on one workflow at one seed, and its CPU time."""
    types = task_types(frame, seed, name)
    start = time.process_time()
    sizer, total = warm_sizer(types, settings), Tally()
    for task in types:
        total.add(walk(sizer, task))
    seconds = time.process_time() - start
    out = total.summary()
    return {"wastage_gbh": out["wastage_gbh"], "failures": out["failures"],
            "instances": out["instances"], "cpu_s": seconds}  # fmt: skip


def row(frame: Any, name: str, seed: int, default: float) -> dict[str, Any]:
    every = cell(frame, name, seed, SizingSettings(sample_refresh_share=0.0))
    scheduled = cell(frame, name, seed, SizingSettings(sample_refresh_share=default))
    out = {
        "workflow": name, "seed": seed,
        "every_gbh": every["wastage_gbh"], "every_failures": every["failures"],
        "every_cpu_s": every["cpu_s"],
        "default_gbh": scheduled["wastage_gbh"], "default_failures": scheduled["failures"],
        "default_cpu_s": scheduled["cpu_s"],
        "ratio": scheduled["wastage_gbh"] / every["wastage_gbh"],
        "speedup": every["cpu_s"] / scheduled["cpu_s"],
    }  # fmt: skip
    print(f"seed {seed} {name}: {out}", file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", type=Path, help="folder of trace_*.csv (Sizey's data/)")
    parser.add_argument("--seeds", default="1996,2023,42")
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    frames = trace_frames(parser, args.traces)
    default = SizingSettings().sample_refresh_share
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = [row(f, n, s, default) for s in seeds for n, f in frames.items()]
    worst = max(r["ratio"] for r in rows) - 1.0
    every_s = sum(r["every_cpu_s"] for r in rows)
    default_s = sum(r["default_cpu_s"] for r in rows)
    result = {
        "seeds": seeds, "sample_refresh_share": default, "rows": rows,
        "summary": {
            "worst_gap": worst, "best_gap": min(r["ratio"] for r in rows) - 1.0,
            "met": worst <= GAP,
            "sum_every_gbh": sum(r["every_gbh"] for r in rows),
            "sum_default_gbh": sum(r["default_gbh"] for r in rows),
            "every_cpu_s": every_s, "default_cpu_s": default_s,
            "speedup": every_s / default_s,
        },
    }  # fmt: skip
    emit(result, args.out, loop_before)


if __name__ == "__main__":
    main()
