"""The online strategy in PanDA's replay: every job sized online beside the
hybrid, the scouts and the oracle; prints JSON.

    python benchmarks/replay_online.py --sizes 20000 --seeds 3 --out results/replay_online.json
    python benchmarks/replay_online.py --sizes 20000 --seeds 3 --utilisation 0.8

The yardstick of ``replay.py --sizes`` (its docstring: one demo per size in ``--workdir``,
per seed a replay of a seeded sample of its test tasks) with the strategies scouts,
hybrid, online, bayes and oracle. Per size the checks add ``online_vs_hybrid`` (each goal
of the issue a ratio of online's mean to the hybrid's or the scouts', with the seeds it
held in, and ``bounded_by``: the reference, oracle or bayes, that misses it too; the issue
grants completion P90 that bound) and ``bounds``' oracle ≤ online on the priced total
within the seeds' spread: the leakage guard (online beating perfect foresight would mean
it sees the future). The goals are
read, never tuned to. ``--merge A.json B.json`` puts several such runs in one file (their
sizes side by side; a small-pool run is its own file: the same size at another pool).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from record import add_out, emit, reference_loop_s
from replay_earlier import merged
from replay_sizes import sizes_report
from scoutless.config import get_settings

STRATEGIES = ["scouts", "hybrid", "online", "bayes", "oracle"]


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000", help="comma-separated demo sizes")
    parser.add_argument("--seeds", type=int, default=3, help="replay seeds per size")
    parser.add_argument("--share", type=float, default=0.9,
                        help="share of the demo's test tasks each seed samples")  # fmt: skip
    parser.add_argument("--utilisation", type=float, help="replay.target_utilisation")
    parser.add_argument("--workdir", type=Path, default=Path("scoutless-work/bench"))
    parser.add_argument("--seed", type=int, default=42, help="the demos' seed")
    parser.add_argument("--merge", type=Path, nargs="+", help="results merged into one, no replay")
    add_out(parser)
    return parser.parse_args()


def main() -> None:
    args = parse()
    if args.merge:
        text = json.dumps(merged(args.merge), indent=1, default=float)
        if args.out:
            args.out.write_text(text + "\n")
        print(text)
        return
    loop_before = reference_loop_s()
    settings = get_settings()
    update: dict[str, object] = {"strategies": STRATEGIES}
    if args.utilisation is not None:
        update["target_utilisation"] = args.utilisation
    settings = settings.model_copy(update={"replay": settings.replay.model_copy(update=update)})
    args.workdir.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    report = sizes_report(sizes, args.seeds, args.workdir, settings, args.share, args.seed)
    emit({**report, "benchmark": "replay_online"}, args.out, loop_before, indent=1, default=float)


if __name__ == "__main__":
    main()
