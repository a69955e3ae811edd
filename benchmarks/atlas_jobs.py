"""Real ATLAS jobs sized job by job: scoutless's online sizer against the ``minramcount``
JEDI recorded and against JEDI's ladder alone, on the six tasks of
``shared/data/traces/panda/job_records_*.csv`` (the walk: ``atlas_walk.py``).

Per task and kill factor (a job dies where maxPSS > factor × its allocation; 1 is a strict
limit): memory GB·h wasted (slack of the attempts that fitted + each killed attempt's
allocation × the time it ran), kills, slack, for the three sides; the goals: at factor 1
the engine wastes ≤ 0.7× the recorded's with fewer kills, beside what the goal allows
whatever sizes the task (``atlas_hindsight.py``: the waste of the feedback lag's window
at the request, the best constant pair in hindsight after it, and that pair's search run
online on the outcomes known); at factor 2 its kills
are ≤ max(the recorded's, 1 % of the jobs); the factor-1 goal again at shorter feedback lags
(``--sweep-lags``: what the lag alone costs) and at other failure penalties
(``--sweep-penalties``: whether any point of the engine's trade between waste and kills
reaches it). Then the same six tasks under the peers' protocol as
``scoutless size`` runs it (each task a type of one table: finished jobs with a
``minramcount``, need = maxPSS, runtime = wall time, request = ``minramcount``, ``rchar``
= ``inputfilebytes``; seed 1996): scoutless against the ``jedi`` baseline per task, and
scoutless's trade-off curve there (the sizing benchmark's failure penalties, one value for
every task at a time): whether some point of it dominates jedi's (no more waste, no more
failures) on each task.

    nice python benchmarks/atlas_jobs.py --out results/atlas_jobs.json
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from atlas_hindsight import factor_1_bounds, hindsight
from atlas_walk import MB, SIDES, OnlineSide, read_task, walk_task
from record import add_out, emit, reference_loop_s
from scoutless.config import Settings, get_settings, updated
from scoutless.sizing.protocol import task_types
from scoutless.sizing.report import size_workflow
from scoutless.sizing.resources import MEMORY
from scoutless.sizing.run import run_types, warm_sizer
from sizing_constants import TRADE_PENALTIES

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / "panda"
#: the goals (the issue's): engine waste ÷ recorded waste at factor 1; kills at factor 2
WASTE_RATIO_GOAL = 0.7
KILL_SHARE_GOAL = 0.01


def task_goals(
    factors: dict[str, dict[str, Any]], jobs: int, after_lag: dict[str, float] | None = None
) -> dict[str, Any]:
    """The engine against the recorded side at factors 1 and 2 (where walked); with
    ``after_lag`` (`atlas_hindsight.hindsight`), the factor-1 goal's two references."""
    out: dict[str, Any] = {}
    strict = factors.get("1")
    if strict:
        eng, rec = strict["engine"], strict["recorded"]
        ratio = eng["wasted_gbh"] / rec["wasted_gbh"] if rec["wasted_gbh"] else float("inf")
        out["factor_1"] = {
            "waste_ratio": ratio, "waste_met": bool(ratio <= WASTE_RATIO_GOAL),
            "kills": eng["kills"], "recorded_kills": rec["kills"],
            "kills_met": bool(eng["kills"] < rec["kills"]),
        }  # fmt: skip
        if after_lag is not None:
            out["factor_1"]["bounds"] = factor_1_bounds(eng, rec, after_lag, WASTE_RATIO_GOAL)
    loose = factors.get("2")
    if loose:
        allowed = max(loose["recorded"]["kills"], KILL_SHARE_GOAL * jobs)
        out["factor_2"] = {
            "kills": loose["engine"]["kills"], "allowed": allowed,
            "kills_met": bool(loose["engine"]["kills"] <= allowed),
            "slack_gbh": loose["engine"]["slack_gbh"],
            "recorded_slack_gbh": loose["recorded"]["slack_gbh"],
        }  # fmt: skip
    return out


def walk_tasks(
    paths: list[Path], factors: list[float], lag: int, done: Callable[[dict], None]
) -> dict[str, Any]:
    """Every task, factor and side, the smallest task first; ``done`` is told the tasks
    walked so far after each (the largest takes most of the run)."""
    tasks: dict[str, Any] = {}
    for path in sorted(paths, key=lambda p: p.stat().st_size):
        jobs = read_task(path)
        began = time.perf_counter()
        per_factor = {
            f"{factor:g}": {
                side: walk_task(jobs, side, factor, lag=lag).summary() for side in SIDES
            }
            for factor in factors
        }
        tasks[jobs.task] = {
            "jobs": len(jobs), "dropped": jobs.dropped, "factors": per_factor,
            "goals": task_goals(per_factor, len(jobs), hindsight(jobs, lag)),
            "seconds": round(time.perf_counter() - began, 1),
        }  # fmt: skip
        print(f"{jobs.task}: {len(jobs)} jobs, {tasks[jobs.task]['seconds']} s", flush=True)
        done(tasks)
    return tasks


def instance_table(paths: list[Path]) -> pd.DataFrame:
    """The six tasks as one instance table (bytes, ms), as the peers' protocol reads it."""
    parts = []
    for path in paths:
        jobs = read_task(path)
        parts.append(pd.DataFrame({
            "workflow": "atlas", "process": jobs.task, "cpus": jobs.cores,
            "rchar": jobs.input_bytes, "rss": jobs.need_mb * MB, "peak_rss": jobs.need_mb * MB,
            "memory": jobs.recorded_mb * MB, "realtime": jobs.wall_s * 1000.0,
            "status": "COMPLETED",
        }))  # fmt: skip
    return pd.concat(parts, ignore_index=True)


def peers(paths: list[Path], seed: int) -> dict[str, Any]:
    """scoutless against the ``jedi`` baseline per task under the peers' protocol, and its
    trade-off curve over the failure penalties (`curve`)."""
    frame = instance_table(paths)
    result = size_workflow(frame, "atlas", seed, settings=Settings())
    per_task = {}
    for task, cell in result["task_types"].items():
        ours, jedi = cell["methods"]["scoutless"], cell["methods"]["jedi"]
        per_task[task] = {
            "instances": cell["instances"],
            "scoutless_gbh": ours["wastage_gbh"], "scoutless_failures": ours["failures"],
            "jedi_gbh": jedi["wastage_gbh"], "jedi_failures": jedi["failures"],
            "met": bool(ours["wastage_gbh"] <= jedi["wastage_gbh"]
                        and ours["failures"] <= jedi["failures"]),
        }  # fmt: skip
    totals = {m: result["methods"][m] for m in ("scoutless", "jedi")}
    return {"seed": seed, "tasks": per_task, "totals": totals,
            "trade_off": curve(frame, seed, per_task)}  # fmt: skip


def curve(frame: pd.DataFrame, seed: int, tasks: dict[str, Any]) -> dict[str, Any]:
    """scoutless's (wastage, failures) per task at each of `TRADE_PENALTIES`, and per task
    the points that dominate jedi's (≤ on both)."""
    types = task_types(frame, seed, "atlas", MEMORY, "submission")  # as `peers` sizes them
    points: dict[str, list[dict[str, float]]] = {t: [] for t in tasks}
    for penalty in TRADE_PENALTIES:
        sizing = Settings().sizing.model_copy(update={"failure_penalty": penalty})
        run = run_types(types, [warm_sizer(types, sizing)])
        for task, cell in run["task_types"].items():
            ours = cell["methods"]["scoutless"]
            points[task].append({"penalty": penalty, "wastage_gbh": ours["wastage_gbh"],
                                 "failures": ours["failures"]})  # fmt: skip
    per_task = {}
    for task, pts in points.items():
        jedi = (tasks[task]["jedi_gbh"], tasks[task]["jedi_failures"])
        winning = [p["penalty"] for p in pts
                   if p["wastage_gbh"] <= jedi[0] and p["failures"] <= jedi[1]]  # fmt: skip
        per_task[task] = {"points": pts, "dominating_penalties": winning,
                          "dominated": bool(winning)}  # fmt: skip
    met = sum(v["dominated"] for v in per_task.values())
    return {"penalties": list(TRADE_PENALTIES), "tasks": per_task, "dominated": met,
            "count": len(per_task)}  # fmt: skip


def lag_sweep(paths: list[Path], lags: list[int]) -> dict[str, Any]:
    """The factor-1 goal at shorter feedback lags (the engine's and recorded sides only):
    how much of a miss the lag accounts for — during the first ``lag`` jobs the engine,
    with no prior, knows nothing but the request, while JEDI's recorded values had its
    scouts."""
    out: dict[str, Any] = {}
    tasks = [read_task(path) for path in paths]
    for lag in lags:
        per_task = {}
        for jobs in tasks:
            strict = {side: walk_task(jobs, side, 1.0, lag=lag).summary()
                      for side in ("recorded", "engine")}  # fmt: skip
            per_task[jobs.task] = task_goals({"1": strict}, len(jobs))["factor_1"]
        out[str(lag)] = {"tasks": per_task,
                         "waste_met": sum(g["waste_met"] for g in per_task.values())}  # fmt: skip
    return out


def penalty_sweep(paths: list[Path], penalties: list[float], lag: int) -> dict[str, Any]:
    """The factor-1 goal at other failure penalties (the engine's side walked again, the
    recorded side's waste as the main walk has it): whether any point of the engine's
    trade between waste and kills reaches a goal the default misses."""
    base = get_settings().sizing
    out: dict[str, Any] = {"penalties": penalties, "default": base.failure_penalty, "tasks": {}}
    for jobs in (read_task(path) for path in paths):
        recorded = walk_task(jobs, "recorded", 1.0, lag=lag).summary()
        points = {}
        for penalty in penalties:
            online = OnlineSide(updated(base, failure_penalty=penalty))
            engine = walk_task(jobs, "engine", 1.0, lag=lag, online=online).summary()
            goal = task_goals({"1": {"engine": engine, "recorded": recorded}}, len(jobs))
            points[f"{penalty:g}"] = {k: goal["factor_1"][k] for k in ("waste_ratio", "kills")}
        out["tasks"][jobs.task] = points
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA, help="folder of job_records_*.csv")
    parser.add_argument("--factors", default="1,2", help="kill factors, comma-separated")
    parser.add_argument("--lag", type=int, default=100, help="releases before an outcome is known")
    parser.add_argument("--seed", type=int, default=1996, help="the peers' split")
    parser.add_argument("--no-peers", action="store_true", help="skip the peers' protocol")
    parser.add_argument(
        "--sweep-lags",
        default="0,10",
        help="shorter lags the factor-1 goal is also walked at ('' none)",
    )
    parser.add_argument(
        "--sweep-penalties",
        default="0,0.1,0.5",
        help="other sizing.failure_penalty values the factor-1 goal is walked at ('' none)",
    )
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    paths = sorted(args.data.glob("job_records_*.csv"))
    if not paths:
        raise SystemExit(f"no job_records_*.csv under {args.data}")
    factors = [float(f) for f in args.factors.split(",")]
    result: dict[str, Any] = {"benchmark": "atlas_jobs", "lag": args.lag, "factors": factors}

    def partial(tasks: dict[str, Any]) -> None:  # a long run leaves what it has measured
        if args.out is not None:
            emit({**result, "tasks": tasks, "complete": False}, args.out, loop_before,
                 default=float)  # fmt: skip

    result["tasks"] = walk_tasks(paths, factors, args.lag, partial)
    result["lag_sweep"] = lag_sweep(paths, [int(x) for x in args.sweep_lags.split(",") if x])
    penalties = [float(x) for x in args.sweep_penalties.split(",") if x]
    result["penalty_sweep"] = penalty_sweep(paths, penalties, args.lag) if penalties else {}
    if not args.no_peers:
        result["peers"] = peers(paths, args.seed)
    emit({**result, "complete": True}, args.out, loop_before, default=float)


if __name__ == "__main__":
    main()
