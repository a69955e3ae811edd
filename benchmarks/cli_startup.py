"""How long the command line takes to answer ``--help``, against ``python -c "import typer"``.

Every figure is the median wall time of ``--repeats`` fresh interpreters (what a user
waits for), in one run. ``scoutless --help`` and every verb's and sub-verb's ``--help``
(``data build --help`` …) run in turns with ``import typer`` (once before every few of
them), so that their ratios compare like with like on a busy machine; the worst and the
median verb's ratio are reported beside ``--help``'s (goal: each within 2x). Then
``--version``, a wrong ``--bundle`` path (refused before anything heavy loads), for
scale, importing every verb module at once (what each start cost when the verbs were
imported eagerly), and ``taskparams`` filling one task from a bundle of every family
(goal: within 2 s; the DNN and the trees are read as numpy arrays, so neither torch nor
XGBoost is imported): ``--bundle`` names one, else a ``scoutless demo --tasks 600
--max-epochs 1`` made for the run (~30 s, not timed).

Every run compiles nothing: bytecode is cached (in a temporary ``PYTHONPYCACHEPREFIX``,
after one warm-up run of each command line), as in an installed package, also where
``PYTHONDONTWRITEBYTECODE`` is set (which would charge ``scoutless``'s own modules, not
Typer's or rich's, a compilation on every start).
`python benchmarks/cli_startup.py --repeats 5 --out results/cli_startup.json`
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record import add_out, emit, reference_loop_s
from scoutless.cli.main import VERBS

CLI = "from scoutless.cli.main import app; app()"
#: the runs' environment: bytecode written to and read from a temporary cache
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
#: the task the README fills before submission
TASK = {"taskName": "mc16_13TeV.410470.PhPy8EG.simul.e6337_s3126", "processingType": "simul",
        "transPath": "Sim_tf.py", "coreCount": 8, "nEventsPerJob": 500}  # fmt: skip
#: the bundle made when none is given: every family, the smallest demo that trains them
DEMO = ["demo", "--tasks", "600", "--max-epochs", "1", "--seed", "7"]


def _once(argv: list[str]) -> float:
    return _timed(argv)[0]


def _timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``python argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, *argv], capture_output=True, check=False, timeout=300, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def wall_s(argv: list[str], repeats: int) -> float:
    """Median seconds of ``repeats`` runs of ``python argv`` (output discarded), after one
    warm-up run."""
    _once(argv)
    return round(statistics.median(_once(argv) for _ in range(repeats)), 3)


def help_lines() -> list[list[str]]:
    """``--help`` of the command, of each verb and of each sub-verb, as command lines."""
    import typer

    from scoutless.cli.main import app

    root = typer.main.get_command(app)
    lines = [["--help"]]
    for name in VERBS:
        lines.append([name, "--help"])
        lines += [[name, sub, "--help"] for sub in getattr(root.commands[name], "commands", {})]
    return lines


def interleaved_s(lines: list[list[str]], repeats: int, every: int = 3) -> dict[str, tuple]:
    """Median (wall, CPU) seconds of ``import typer`` (key ``""``) and of each ``scoutless
    LINE``, ``repeats`` rounds in which ``import typer`` runs before every ``every`` lines:
    on a shared machine whose speed drifts, each ratio compares runs made under the same
    load (CPU seconds drift less than wall seconds when other work shares the cores)."""
    times: dict[str, list[tuple[float, float]]] = {"": []} | {" ".join(x): [] for x in lines}
    for line in [["-c", "import typer"], *(["-c", CLI, *x] for x in lines)]:
        _timed(line)  # warm-up: writes the bytecode cache
    for _ in range(repeats):
        for i, line in enumerate(lines):
            if i % every == 0:
                times[""].append(_timed(["-c", "import typer"]))
            times[" ".join(line)].append(_timed(["-c", CLI, *line]))
    return {
        name: tuple(round(statistics.median(t[k] for t in runs), 3) for k in (0, 1))
        for name, runs in times.items()
    }


def _ratios(helps: dict[str, float], typer_s: float, prefix: str) -> dict:
    """``--help``'s ratio to ``import typer``, the worst and the median verb's, those over 2x."""
    verbs = {name.removesuffix(" --help"): s for name, s in helps.items() if name != "--help"}
    worst = max(verbs, key=verbs.__getitem__)
    return {
        f"{prefix}help_ratio": round(helps["--help"] / typer_s, 2),
        f"{prefix}verb_help_ratio_max": round(verbs[worst] / typer_s, 2),
        f"{prefix}verb_help_worst": worst,
        f"{prefix}verb_help_ratio_median": round(statistics.median(verbs.values()) / typer_s, 2),
        f"{prefix}verb_help_over_goal": sorted(v for v, s in verbs.items() if s > 2 * typer_s),
    }


def taskparams_s(bundle: Path | None, folder: Path, repeats: int) -> dict:
    """Median (wall, CPU) seconds of ``scoutless taskparams`` filling :data:`TASK` from
    ``bundle`` (made by :data:`DEMO` in ``folder`` when None), the rollout read from an
    empty SQLite file (shadow), each run after an ``import typer`` it is compared with."""
    made = bundle is None
    if bundle is None:
        subprocess.run([sys.executable, "-c", CLI, *DEMO, "--workdir", str(folder / "demo")],
                       capture_output=True, check=True, timeout=1800, env=ENV)  # fmt: skip
        bundle = folder / "demo" / "bundle"
    task = folder / "task.json"
    task.write_text(json.dumps(TASK))
    line = ["-c", CLI, "taskparams", str(task), "--bundle", str(bundle),
            "--db", f"sqlite:///{folder / 'rollout.sqlite'}", "--out", str(folder / "out.json")]  # fmt: skip
    _timed(line)  # warm-up: the bytecode cache
    typer_runs, runs = [], []
    for _ in range(repeats):
        typer_runs.append(_timed(["-c", "import typer"]))
        runs.append(_timed(line))
    if not (folder / "out.json").exists():
        raise SystemExit(f"taskparams wrote no {folder / 'out.json'}: run {line} by hand")
    wall, cpu = (statistics.median(r[k] for r in runs) for k in (0, 1))
    typer_wall, typer_cpu = (statistics.median(r[k] for r in typer_runs) for k in (0, 1))
    return {
        "taskparams_one_task_s": round(wall, 3),
        "taskparams_one_task_cpu_s": round(cpu, 3),
        "taskparams_ratio": round(wall / typer_wall, 2),
        "cpu_taskparams_ratio": round(cpu / typer_cpu, 2),
        "taskparams_bundle": " ".join(DEMO) if made else "given (--bundle)",
        "goal_taskparams_s_at_most": 2,
    }


def measure(repeats: int, bundle: Path | None, folder: Path) -> dict:
    timed = interleaved_s(help_lines(), repeats)
    (typer_s, typer_cpu_s), helps = timed.pop(""), timed
    wall = {name: t[0] for name, t in helps.items()}
    modules = sorted({verb.target.partition(":")[0] for verb in VERBS.values()})
    eager_s = wall_s(["-c", "; ".join(f"import {m}" for m in modules)], max(1, repeats // 2))
    missing_s = wall_s(["-c", CLI, "serve", "--bundle", "/nonexistent/bundle"], repeats)
    return {
        "repeats": repeats,
        "import_typer_s": typer_s,
        "help_s": wall["--help"],
        "version_s": wall_s(["-c", CLI, "--version"], repeats),
        "verb_help_s": {n.removesuffix(" --help"): s for n, s in wall.items() if n != "--help"},
        **_ratios(wall, typer_s, ""),
        "import_typer_cpu_s": typer_cpu_s,
        **_ratios({name: t[1] for name, t in helps.items()}, typer_cpu_s, "cpu_"),
        "wrong_bundle_path_s": missing_s,
        "every_verb_imported_s": eager_s,
        "goal_help_ratio_at_most": 2,
        **taskparams_s(bundle, folder, repeats),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="fresh interpreters per figure")
    parser.add_argument("--bundle", type=Path, help="taskparams' bundle (default: a demo's)")
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    with tempfile.TemporaryDirectory(prefix="cli-startup-pyc-") as cache:
        ENV["PYTHONPYCACHEPREFIX"] = cache
        doc = measure(args.repeats, args.bundle, Path(cache))
    emit(doc, args.out, loop_before)


if __name__ == "__main__":
    main()
