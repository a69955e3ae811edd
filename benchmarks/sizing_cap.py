"""What bounding a task type's state costs in wastage: scoutless's online sizer on Sizey's
six nf-core traces under the peers' protocol (the ``scoutless`` row of
`benchmarks/sizing.py`: each type's history up front, its online 70 % sized in order) with
every outcome kept, with the default cap (`SizingSettings.max_outcomes_per_type`) and with
a cap that binds on every large type (``--tight``, 128); per workflow and seed the
wastage, the failures and each cap's wastage over the uncapped one's.

    nice python benchmarks/sizing_cap.py TRACES_DIR --seeds 1996,2023,42 \\
        --out results/sizing_cap.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from record import add_out, emit, reference_loop_s
from scoutless.config import SizingSettings
from scoutless.sizing.instances import workflow_name
from scoutless.sizing.protocol import Tally, task_types, walk
from scoutless.sizing.run import warm_sizer
from scoutless.sources.nextflow import read_nextflow

#: the goals: the default cap within 2 % of the uncapped wastage, a tight one within 5 %
DEFAULT_GAP, TIGHT_GAP = 0.02, 0.05


def wastage(frame: Any, name: str, seed: int, cap: int | None) -> dict[str, float | int]:
    """The warm sizer's cell on one workflow at one seed with ``cap`` outcomes a type, and
    the most rows a type held."""
    types = task_types(frame, seed, name)
    sizer, total = warm_sizer(types, SizingSettings(max_outcomes_per_type=cap)), Tally()
    for task in types:
        total.add(walk(sizer, task))
    cell = total.summary()
    held = max(len(state.rows) for state in sizer.sizer.types.values())
    return {"wastage_gbh": cell["wastage_gbh"], "failures": cell["failures"], "held": held}


def row(frame: Any, name: str, seed: int, caps: dict[str, int | None]) -> dict[str, Any]:
    """One workflow at one seed under every cap, each cap's ratio to the uncapped wastage.
    A cap at or above the most rows a type held uncapped never binds: its cell is the
    uncapped one (the same allocations), not walked again."""
    out: dict[str, Any] = {"workflow": name, "seed": seed}
    uncapped = wastage(frame, name, seed, None)
    out["most_rows_held"] = uncapped["held"]
    for label, cap in caps.items():
        binds = cap is not None and cap < uncapped["held"]
        cell = wastage(frame, name, seed, cap) if binds else uncapped
        out[f"{label}_gbh"], out[f"{label}_failures"] = cell["wastage_gbh"], cell["failures"]
    for label in caps:
        if label != "uncapped":
            out[f"{label}_ratio"] = out[f"{label}_gbh"] / out["uncapped_gbh"]
    print(f"seed {seed} {name}: {out}", file=sys.stderr, flush=True)
    return out


def summary(rows: list[dict[str, Any]], default: int, tight: int) -> dict[str, Any]:
    """Each cap's worst excess over the uncapped wastage (ratio − 1; below 0: the cap
    wasted less everywhere) over every workflow and seed, and whether it meets its goal."""
    worst = {c: max(r[f"cap_{c}_ratio"] - 1.0 for r in rows) for c in (default, tight)}
    return {
        "default_cap": default, "tight_cap": tight,
        "worst_gap_default": worst[default], "worst_gap_tight": worst[tight],
        "default_met": worst[default] <= DEFAULT_GAP, "tight_met": worst[tight] <= TIGHT_GAP,
    }  # fmt: skip


def trace_frames(parser: argparse.ArgumentParser, traces: Path) -> dict[str, Any]:
    """Each ``trace_*.csv`` in ``traces`` imported as `scoutless import nextflow` does, by
    workflow; none there is the command line's error."""
    paths = sorted(traces.glob("trace_*.csv"))
    if not paths:
        parser.error(f"{traces}: no trace_*.csv")
    return {workflow_name(p): read_nextflow([p], settings=SizingSettings()).frame for p in paths}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", type=Path, help="folder of trace_*.csv (Sizey's data/)")
    parser.add_argument("--seeds", default="1996,2023,42")
    parser.add_argument("--tight", type=int, default=128, help="a cap that binds")
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    frames = trace_frames(parser, args.traces)
    default = SizingSettings().max_outcomes_per_type or 0
    caps = {"uncapped": None, f"cap_{default}": default, f"cap_{args.tight}": args.tight}
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = [row(f, n, s, caps) for s in seeds for n, f in frames.items()]
    result = {"seeds": seeds, "rows": rows, "summary": summary(rows, default, args.tight)}
    emit(result, args.out, loop_before)


if __name__ == "__main__":
    main()
