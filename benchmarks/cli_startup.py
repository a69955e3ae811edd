"""How long the command line takes to answer ``--help``, against ``python -c "import typer"``.

Every figure is the median wall time of ``--repeats`` fresh interpreters (what a user
waits for), in one run; ``import typer`` and ``--help`` run in turns, twice as often, so
that their ratio compares like with like on a busy machine:
``import typer`` alone, ``scoutless --help``, ``--version``, each verb's ``--help``, a
wrong ``--bundle`` path (refused before anything heavy loads), and, for scale, importing
every verb module at once (what each start cost when the verbs were imported eagerly).
`python benchmarks/cli_startup.py --repeats 5 --out results/cli_startup.json`
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from record import add_out, emit, reference_loop_s
from scoutless.cli.main import VERBS

CLI = "from scoutless.cli.main import app; app()"


def _once(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *argv], capture_output=True, check=False, timeout=300)
    return time.perf_counter() - start


def wall_s(argv: list[str], repeats: int) -> float:
    """Median seconds of ``repeats`` runs of ``python argv`` (output discarded)."""
    return round(statistics.median(_once(argv) for _ in range(repeats)), 3)


def paired_s(first: list[str], second: list[str], repeats: int) -> tuple[float, float]:
    """Medians of ``first`` and ``second`` run in turns: on a shared machine whose speed
    drifts, a ratio of the two compares runs made under the same load."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        times[0].append(_once(first))
        times[1].append(_once(second))
    return round(statistics.median(times[0]), 3), round(statistics.median(times[1]), 3)


def measure(repeats: int) -> dict:
    typer_s, help_s = paired_s(["-c", "import typer"], ["-c", CLI, "--help"], 2 * repeats)
    verbs = {name: wall_s(["-c", CLI, name, "--help"], repeats) for name in VERBS}
    modules = sorted({verb.target.partition(":")[0] for verb in VERBS.values()})
    eager_s = wall_s(["-c", "; ".join(f"import {m}" for m in modules)], max(1, repeats // 2))
    missing_s = wall_s(["-c", CLI, "serve", "--bundle", "/nonexistent/bundle"], repeats)
    return {
        "repeats": repeats,
        "import_typer_s": typer_s,
        "help_s": help_s,
        "help_ratio": round(help_s / typer_s, 2),
        "version_s": wall_s(["-c", CLI, "--version"], repeats),
        "verb_help_s": verbs,
        "verb_help_ratio_max": round(max(verbs.values()) / typer_s, 2),
        "verb_help_ratio_median": round(statistics.median(verbs.values()) / typer_s, 2),
        "wrong_bundle_path_s": missing_s,
        "every_verb_imported_s": eager_s,
        "goal_help_ratio_at_most": 2,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh interpreters per figure")
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    emit(measure(args.repeats), args.out, loop_before)


if __name__ == "__main__":
    main()
