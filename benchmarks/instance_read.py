"""What reading an instance table strictly costs (`sizing.instances.read_instances`: every
row's fields counted, every numeric cell checked, a malformed row named by its line) against
pandas' plain `read_csv`, which coerces nothing and checks nothing. Sizey's six traces
concatenated ``--copies`` times into one CSV; the same table with one quoted field goes
through the exact (csv module) path. Each way read ``--repeats`` times in turn (a shared
machine's load falls on all alike), the least time kept; the frames compared for equality.

    nice python benchmarks/instance_read.py TRACES_DIR --copies 20 --out results/instance_read.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from record import add_out, emit, reference_loop_s
from scoutless.sizing.instances import NUMERIC_COLUMNS, read_instances


def tables(traces: Path, copies: int, folder: Path) -> tuple[Path, Path, int, int]:
    """The plain table, the same with one field quoted, its rows and columns."""
    frame = pd.concat([pd.read_csv(p, low_memory=False) for p in sorted(traces.glob("trace_*.csv"))] * copies,
                      ignore_index=True)  # fmt: skip
    plain, quoted = folder / "plain.csv", folder / "quoted.csv"
    frame.to_csv(plain, index=False)
    text = plain.read_text()
    head, _, body = text.partition("\n")
    first, _, rest = body.partition(",")
    quoted.write_text(f'{head}\n"{first}",{rest}')
    return plain, quoted, len(frame), frame.shape[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", type=Path, help="folder of trace_*.csv (Sizey's data/)")
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    with tempfile.TemporaryDirectory() as tmp:
        plain, quoted, rows, columns = tables(args.traces, args.copies, Path(tmp))
        ways = {"pandas_read_csv": lambda: pd.read_csv(plain, low_memory=False),
                "strict_one_row_a_line": lambda: read_instances(plain),
                "strict_exact": lambda: read_instances(quoted)}  # fmt: skip
        seconds = {w: float("inf") for w in ways}
        frames = {}
        for _ in range(args.repeats):
            for way, read in ways.items():
                start = time.perf_counter()
                frames[way] = read()
                seconds[way] = min(seconds[way], time.perf_counter() - start)
    numeric = [c for c in NUMERIC_COLUMNS if c in frames["strict_exact"].columns]
    same = frames["strict_one_row_a_line"][numeric].equals(frames["strict_exact"][numeric])
    base = seconds["pandas_read_csv"]
    result = {
        "rows": rows, "columns": columns, "copies": args.copies, "repeats": args.repeats,
        "seconds": {w: round(s, 3) for w, s in seconds.items()},
        "ratio_to_pandas": {w: round(s / base, 2) for w, s in seconds.items()},
        "numeric_columns_equal": bool(same),
    }  # fmt: skip
    emit(result, args.out, loop_before, indent=1)


if __name__ == "__main__":
    main()
