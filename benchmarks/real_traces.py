"""Prediction quality on real traces, walk-forward: retrain every period, predict the next.

Traces: the four Parallel Workloads Archive logs in ../shared/data/traces/swf/ and the
PanDA job records. Each is imported exactly as ``scoutless import`` does it (quantile bins
over the first 85 % of submit times; baselines and history features without look-ahead),
then scored as ``scoutless evaluate --walk-forward`` scores it: from the time-split
boundary on, every ``--period`` the rows that had finished before the period began (at
most ``--max-train`` of the most recent) train a bundle, and the period is predicted as a
deployment serves it: a fresh bundle every ``--retrain-every`` (default weekly, each on the
rows known when it takes over; ``none``: one bundle per period). PanDA job exports have no
clock: three chunks of submission order, one bundle each. ``--max-periods`` keeps the last
periods only, to bound the run on a small shared machine.

Every cell is the mean ± standard deviation over ``--seeds`` (training seeds: the
fit/validation parts and the models' randomness). ``served`` is what the service
answers: the champion behind the guard that keeps it at least as good as the input
baselines on validation (:mod:`scoutless.models.guard`). The goal column compares it
with max(user_request, last2) per metric; rows without a baseline value take the
training majority class, as ``scoutless evaluate`` scores them.

Prints one JSON document (per trace, target and seed, plus the Markdown table).

Cite: D. G. Feitelson, D. Tsafrir, D. Krakov, "Experience with using the Parallel Workloads
Archive", JPDC 74(10), 2014, and each log's donor (in the table's ``info['citation']``).

    nice python benchmarks/real_traces.py [--period 30d] [--max-periods 1] [--max-train 40000]
        [--retrain-every 7d|none] [--seeds 42,43,44]

``--replay`` instead runs ``scoutless replay --trace`` on each SWF trace's test rows (an
XGBoost bundle trained on its training rows, or the one in ``--bundles DIR/<trace>``):
per strategy the wasted core-hours, memory slack and first-attempt success against the
users' requests (the replay's ``selective_vs_request`` check, and the same rows for every
strategy), the kills and the priced total; it is written into ``--out`` under ``replay``,
keeping the walk-forward figures already there. ``--no-bundle`` replays without a model:
the request, the online sizing engine and the oracle only (the online strategy's memory
bounds: at most the requests' slack and 1.5 × the oracle's).

    nice python benchmarks/real_traces.py --replay [--traces LANL-CM5,LPC-EGEE,CTC-SP2,SDSC-SP2]
        [--bundles DIR | --no-bundle] --out results/real_traces.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from record import add_out, emit, reference_loop_s
from scoutless.config import Settings
from scoutless.sources.assemble import to_training_table
from scoutless.sources.load import load_trace
from scoutless.training.walk_forward import walk_forward

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces"
TRACES: dict[str, tuple[str, list[Path]]] = {
    "LPC-EGEE": ("swf", [DATA / "swf/LPC-EGEE-2004-1.2-cln.swf.gz"]),
    "LANL-CM5": ("swf", [DATA / "swf/LANL-CM5-1994-4.1-cln.swf.gz"]),
    "CTC-SP2": ("swf", [DATA / "swf/CTC-SP2-1996-3.1-cln.swf.gz"]),
    "SDSC-SP2": ("swf", [DATA / "swf/SDSC-SP2-1998-4.2-cln.swf.gz"]),
    "PanDA-jobs": ("panda-jobs", sorted((DATA / "panda").glob("job_records_*.csv"))),
}
GOAL_BASELINES = ("user_request", "last2")
COLUMNS = ("user_request", "last2", "scouts", "xgb", "dnn", "served")


def _mean_sd(values: list[float]) -> dict[str, float]:
    return {"mean": float(np.mean(values)), "sd": float(np.std(values))}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per target and predictor: mean ± sd over seeds, and the goal check for ``served``."""
    out: dict[str, Any] = {}
    for t in runs[0]["overall"]:
        names = runs[0]["overall"][t]
        entry: dict[str, Any] = {"rows_test": names[next(iter(names))]["n"], "models": {}}
        for name in names:
            entry["models"][name] = {
                m: _mean_sd([r["overall"][t][name][m] for r in runs])
                for m in ("macro_f1", "accuracy")
            }
        base = [entry["models"][b] for b in GOAL_BASELINES if b in entry["models"]]
        if base and "served" in entry["models"]:
            served = entry["models"]["served"]
            best_f1 = max(b["macro_f1"]["mean"] for b in base)
            best_acc = max(b["accuracy"]["mean"] for b in base)
            gain = served["macro_f1"]["mean"] - best_f1
            entry["goal"] = {
                "macro_f1_gain": round(gain, 4),
                "accuracy_gain": round(served["accuracy"]["mean"] - best_acc, 4),
                "met": bool(gain >= 0.05 and served["accuracy"]["mean"] >= best_acc),
            }
        out[t] = entry
    return out


def _cell(m: dict[str, Any] | None) -> str:
    if m is None:
        return "—"
    f1, acc = m["macro_f1"], m["accuracy"]
    return f"{f1['mean']:.3f}±{f1['sd']:.3f} / {acc['mean']:.3f}±{acc['sd']:.3f}"


def markdown(results: dict[str, Any], seeds: int) -> str:
    lines = [
        "| trace | target | test rows | " + " | ".join(COLUMNS) + " | goal (ΔmF1 / Δacc) |",
        "|---|---|---|" + "---|" * (len(COLUMNS) + 1),
    ]
    for trace, targets in results.items():
        for t, e in targets.items():
            cells = [_cell(e["models"].get(c)) for c in COLUMNS]
            goal = e.get("goal")
            mark = (
                f"{'✔' if goal['met'] else '✘'} {goal['macro_f1_gain']:+.3f} / "
                f"{goal['accuracy_gain']:+.3f}"
                if goal
                else "—"
            )
            lines.append(f"| {trace} | {t} | {e['rows_test']} | " + " | ".join(cells)
                         + f" | {mark} |")  # fmt: skip
    return "\n".join(lines) + (
        f"\n\ncells: macro-F1 / accuracy, mean ± sd over {seeds} seeds, pooled over the "
        "walk-forward periods"
    )


REPLAY_TRACES = ("LANL-CM5", "LPC-EGEE", "CTC-SP2", "SDSC-SP2")
REPLAY_FIGURES = (
    "first_attempt_success", "wasted_core_hours", "memory_slack_gb_hours", "memory_kills",
    "walltime_kills", "walltime_slack_core_hours", "priced_total_core_hours",
)  # fmt: skip


def replay_trace_figures(
    name: str, work: Path, bundles: Path | None, *, model: bool = True
) -> dict[str, Any]:
    """One SWF trace imported, a bundle trained on its training rows (or ``bundles/name``;
    none without ``model``), its test rows replayed: each strategy's figures and its
    checks against the request."""
    from scoutless.bundle import load_bundle
    from scoutless.config import get_settings
    from scoutless.replay.checks import TRACE_METRICS, at_least_as_good
    from scoutless.replay.runner import replay_trace
    from scoutless.training.run import train_bundle

    fmt, files = TRACES[name]
    table = to_training_table(load_trace(fmt, files, settings=Settings()), settings=Settings())
    table_path = table.save(work / f"{name}.parquet")
    bundle = bundles / name if bundles is not None else None
    if model and (bundle is None or not bundle.exists()):
        bundle = train_bundle(table, work / f"bundle-{name}", models=("xgb",), progress=False,
                              split=table.default_split, n_jobs=1, settings=Settings())  # fmt: skip
    start = time.perf_counter()
    predictor = load_bundle(bundle) if model else None
    doc = replay_trace(table_path, predictor, work / name, get_settings())
    strategies = doc["strategies"]
    keys = (*REPLAY_FIGURES, "priced_components", "request_kept", "sizing")
    figures = {s: {k: e[k] for k in keys if k in e} for s, e in strategies.items()}
    checks = {
        s: at_least_as_good(strategies, s, "request", TRACE_METRICS)
        for s in strategies
        if s != "request"
    }
    slack = {s: e["memory_slack_gb_hours"] for s, e in strategies.items()}
    ratios = {"vs_request": slack["online"] / slack["request"] if slack["request"] else None,
              "vs_oracle": slack["online"] / slack["oracle"] if slack["oracle"] else None}  # fmt: skip
    bounds = {**ratios, "met": slack["online"] <= min(slack["request"], 1.5 * slack["oracle"])}
    return {
        "online_memory_bounds": bounds,
        "test_jobs": doc["workload"]["jobs"],
        "seconds": round(time.perf_counter() - start, 1),
        "kill_caps": doc["kill_caps"],
        "strategies": figures,
        "vs_request": checks,
    }


def replay_main(args: argparse.Namespace, loop_before: float) -> None:
    """``--replay``: every trace's replay figures, merged into ``--out`` under ``replay``."""
    import tempfile

    names = [n for n in args.traces.split(",") if n in REPLAY_TRACES] if args.traces else []
    replayed = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or REPLAY_TRACES:
            replayed[name] = replay_trace_figures(name, Path(tmp), args.bundles,
                                                  model=not args.no_bundle)  # fmt: skip
            met = {s: c["all_met"] for s, c in replayed[name]["vs_request"].items()}
            print(f"{name}: {replayed[name]['seconds']} s, vs request {met}", file=sys.stderr)
    kept = json.loads(args.out.read_text()) if args.out is not None and args.out.exists() else {}
    kept.pop("machine", None)
    replayed = {**kept.get("replay", {}), **replayed}  # traces not replayed now are kept
    emit({**kept, "replay": replayed}, args.out, loop_before, indent=2, default=str)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--period", default="30d")
    parser.add_argument("--max-periods", type=int, default=1)
    parser.add_argument("--max-train", type=int, default=40_000)
    parser.add_argument(
        "--retrain-every", default="7d", help="7d, 1d … or none (one bundle per period)"
    )
    parser.add_argument("--max-epochs", type=int, default=15)
    parser.add_argument("--models", default="xgb")
    parser.add_argument("--traces", default=",".join(TRACES))
    parser.add_argument("--seeds", default="42")
    parser.add_argument("--replay", action="store_true", help="replay --trace on the SWF traces")
    parser.add_argument("--bundles", type=Path, help="--replay: trained bundles, DIR/<trace>")
    parser.add_argument("--no-bundle", action="store_true",
                        help="--replay: request, online and oracle only (no model)")  # fmt: skip
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    if args.replay:
        replay_main(args, loop_before)
        return
    torch.set_num_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")]
    models = tuple(args.models.split(","))
    results: dict[str, Any] = {}
    raw: dict[str, Any] = {}
    timings: dict[str, float] = {}
    for name in args.traces.split(","):
        fmt, files = TRACES[name]
        start = time.perf_counter()
        table = to_training_table(load_trace(fmt, files, settings=Settings()), settings=Settings())
        runs = [
            walk_forward(
                table,
                args.period,
                models=models,
                max_periods=args.max_periods,
                max_train=args.max_train,
                seed=seed,
                train_options={"n_jobs": 1, "max_epochs": args.max_epochs},
                retrain_every=args.retrain_every,
                settings=Settings(),
            )
            for seed in seeds
        ]
        raw[name] = [{"seed": s, "periods": r["periods"]} for s, r in zip(seeds, runs, strict=True)]
        results[name] = summarise(runs)
        timings[name] = round(time.perf_counter() - start, 1)
        goals = {t: e.get("goal") for t, e in results[name].items()}
        print(f"{name}: {timings[name]} s {json.dumps(goals)}", file=sys.stderr, flush=True)
    emit(
        {
            "benchmark": "real_traces",
            "evaluation": f"walk-forward, period {args.period}, last {args.max_periods} periods",
            "max_train": args.max_train,
            "retrain_every": args.retrain_every,
            "models": list(models),
            "seeds": seeds,
            "seconds": timings,
            "seconds_total": round(sum(timings.values()), 1),
            "results": results,
            "periods": raw,
            "markdown": markdown(results, len(seeds)),
            "citation": "D. G. Feitelson, D. Tsafrir, D. Krakov, 'Experience with using "
            "the Parallel Workloads Archive', JPDC 74(10), 2014",
        },
        args.out,
        loop_before,
        indent=2,
        default=str,
    )


if __name__ == "__main__":
    main()
