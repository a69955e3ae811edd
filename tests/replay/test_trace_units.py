"""The trace path's memory units: an SWF log's KB per processor through the import and
`scoutless replay --trace`, with jobs of one type on 1 to 32 cores."""

from __future__ import annotations

import numpy as np
from replay_helpers import settings_with

from scoutless.config import Settings
from scoutless.replay.runner import replay_trace
from scoutless.sources.assemble import to_training_table
from scoutless.sources.load import load_trace

#: the processors a type's jobs run on: the same program, narrow and wide
PROCESSORS = (1, 2, 8, 32)


def _swf_line(i: int, rng: np.random.Generator, program: int, used_mb: float) -> str:
    """One SWF job (18 fields): ``used_mb`` ± 5 % per processor, 4 GB per processor asked,
    submitted ten minutes after the one before, running 1–2 h."""
    procs = int(rng.choice(PROCESSORS))
    used_kb = int(used_mb * 1024 * rng.uniform(0.95, 1.05))
    run = int(rng.uniform(3600, 7200))
    return (
        f"{i + 1} {600 * i} 0 {run} {procs} {run} {used_kb} {procs} 10800 {4 * 1024 * 1024} "
        f"1 {program} 1 {program} 1 1 -1 -1"
    )


def write_swf(path, n: int = 240, seed: int = 5) -> None:
    """A small SWF log with memory in KB per processor and multi-core jobs: two programs
    (users), one needing ~1.2 GB a processor, one ~2.4 GB (above the standard slot)."""
    rng = np.random.default_rng(seed)
    lines = [_swf_line(i, rng, 1 + i % 2, (1200.0, 2400.0)[i % 2]) for i in range(n)]
    header = "; Version: 2.2\n; UnixStartTime: 1000000000\n"
    path.write_text(header + "\n".join(lines) + "\n")


def test_online_memory_slack_is_within_the_requests_and_near_the_oracles(tmp_path):
    write_swf(tmp_path / "log.swf")
    table = to_training_table(
        load_trace("swf", [tmp_path / "log.swf"], settings=Settings()),
        test_fraction=0.5,
        settings=Settings(),
    )
    table.save(tmp_path / "table.parquet")
    document = replay_trace(tmp_path / "table.parquet", None, tmp_path / "out", settings_with())
    slack = {
        name: strategy["memory_slack_gb_hours"] for name, strategy in document["strategies"].items()
    }
    # the wide jobs' totals are not the narrow ones' need: sized per core, as the log gives it
    assert slack["oracle"] > 0
    assert slack["online"] <= 1.5 * slack["oracle"]
    assert slack["online"] <= slack["request"]
    assert document["strategies"]["online"]["memory_kills"] == 0


def write_tight_swf(path, programs: int = 40, jobs: int = 8, seed: int = 6) -> None:
    """Many programs with few jobs each, every user asking just above what the program
    uses (1.1 × its largest need, per processor): a history too thin for a tail of its own."""
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(programs * jobs):
        program = 1 + i % programs
        used_mb = 500.0 + 2500.0 * ((program * 0.618) % 1.0)
        procs = int(rng.choice(PROCESSORS))
        used_kb = int(used_mb * 1024 * rng.uniform(0.9, 1.0))
        asked_kb = int(1.1 * used_mb * 1024)
        run = int(rng.uniform(3600, 7200))
        lines.append(f"{i + 1} {600 * i} 0 {run} {procs} {run} {used_kb} {procs} 10800 "
                     f"{asked_kb} 1 {program} 1 {program} 1 1 -1 -1")  # fmt: skip
    path.write_text("; Version: 2.2\n; UnixStartTime: 1000000000\n" + "\n".join(lines) + "\n")


def test_online_never_asks_above_a_request_that_has_held(tmp_path):
    write_tight_swf(tmp_path / "log.swf")
    trace = load_trace("swf", [tmp_path / "log.swf"], settings=Settings())
    table = to_training_table(trace, test_fraction=0.5, settings=Settings())
    table.save(tmp_path / "table.parquet")
    document = replay_trace(tmp_path / "table.parquet", None, tmp_path / "out", settings_with())
    strategies = document["strategies"]
    slack = {name: s["memory_slack_gb_hours"] for name, s in strategies.items()}
    assert slack["online"] <= slack["request"] and slack["online"] <= 1.5 * slack["oracle"]
    assert strategies["online"]["memory_kills"] == 0
