"""The replay's yardstick (``replay.py --sizes``): one demo per size, per seed a replay of
a seeded sample of its test tasks, and per size the strategies' means and spread over the
seeds with the checks on them (``replay.py``'s docstring says what each holds);
``--recheck`` computes those summaries again from the runs a result keeps. A helper module
of ``replay.py``, not a benchmark of its own.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from scoutless.config import Settings
from scoutless.replay.checks import (
    METRICS,
    RETRY_METRICS,
    model_misses,
    online_goals,
    reference_bound,
    value_at,
)

PRICED = "priced_total_core_hours"


#: what a run keeps of a strategy's replay.json entry
KEPT = (*(path for _, path, _ in METRICS + RETRY_METRICS), "priced_components",
        "priced_loads", "tasks_broken", "tasks_exhausted", "sizing")  # fmt: skip
#: what a size's summary averages over its seeds
AVERAGED = METRICS + RETRY_METRICS


def demo_folder(size: int, workdir: Path, seed: int) -> Path:
    """The size's demo (generated and trained once, xgb only)."""
    folder = workdir / f"demo_{size}_{seed}"
    if not (folder / "bundle").exists() or not (folder / "table.parquet").exists():
        from scoutless.cli.demo import demo

        demo(workdir=folder, tasks=size, seed=seed, models="xgb", max_epochs=None)
    return folder


def compact(entry: dict[str, Any]) -> dict[str, Any]:
    """A strategy's figures a run keeps (the CDFs and breakdowns stay in replay.json)."""
    out: dict[str, Any] = {}
    for path in KEPT:
        key = path.split(".")[0]
        if key in entry:
            out[key] = entry[key]
    return out


def one_run(folder: Path, settings: Settings, seed: int, share: float) -> dict[str, Any]:
    """One replay of a seeded sample of the demo's test tasks: compact figures + checks."""
    from scoutless.bundle import load_bundle
    from scoutless.cli.data import synthetic_values
    from scoutless.history.table import TrainingTable
    from scoutless.replay.runner import replay_history

    table = TrainingTable.load(folder / "table.parquet")
    _, test = table.split(table.default_split)
    ids = test["jeditaskid"].to_numpy()
    started = time.perf_counter()
    document = replay_history(
        f"sqlite:///{(folder / 'history.sqlite').resolve()}", load_bundle(folder / "bundle"),
        folder / f"replay_seed{seed}", settings, n_tasks=max(1, round(share * len(ids))),
        seed=seed, only=ids, read_truth=synthetic_values,
    )  # fmt: skip
    return {
        "tasks": document["workload"]["tasks"],
        "jobs": document["workload"]["jobs"],
        "pool_cores": document["config"]["pool_cores"],
        "seconds": round(time.perf_counter() - started, 1),
        "strategies": {n: compact(e) for n, e in document["strategies"].items()},
        "ranking": document["ranking"],
        "checks": document["checks"],
    }


def _figure(run: dict[str, Any], name: str, path: str) -> float | None:
    value = value_at(run["strategies"].get(name), path)
    return float(value) if isinstance(value, int | float) else None


def spread(runs: list[dict[str, Any]], name: str, path: str) -> dict[str, float | None]:
    """Mean and standard deviation over the seeds (None where a seed lacks the figure)."""
    values = [_figure(r, name, path) for r in runs]
    if not values or any(v is None for v in values):
        return {"mean": None, "sd": None}
    arr = np.asarray(values, dtype=float)
    return {"mean": float(arr.mean()), "sd": float(arr.std(ddof=1)) if len(arr) > 1 else 0.0}


def hybrid_rows(runs: list[dict[str, Any]], means: dict[str, Any]) -> list[dict[str, Any]]:
    """Per metric the hybrid's mean against the scouts', the seeds it held in, and which
    reference does worse than the scouts too (``reference_bound`` on the means)."""
    rows = []
    for label, path, better in METRICS:
        h, s = spread(runs, "hybrid", path), spread(runs, "scouts", path)
        if h["mean"] is None or s["mean"] is None:
            continue
        holds = [
            (a <= b if better == "lower" else a >= b)
            for a, b in ((_figure(r, "hybrid", path), _figure(r, "scouts", path)) for r in runs)
            if a is not None and b is not None
        ]
        met = h["mean"] <= s["mean"] if better == "lower" else h["mean"] >= s["mean"]
        rows.append({"metric": label, "figures": {"hybrid": h, "scouts": s},
                     "goal": f"hybrid {'≤' if better == 'lower' else '≥'} scouts (mean)",
                     "seeds_met": f"{sum(holds)}/{len(holds)}", "met": met,
                     "bounded_by": reference_bound(means, path, better, "scouts")})  # fmt: skip
    return rows


def bound_rows(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = list(runs[0]["strategies"]) if runs else []
    pairs = [("oracle", n) for n in names if n != "oracle" and "oracle" in names]
    if "bayes" in names and "predicted" in names:
        pairs.append(("bayes", "predicted"))
    rows = []
    for bound, other in pairs:
        b, o = spread(runs, bound, PRICED), spread(runs, other, PRICED)
        if b["mean"] is None or o["mean"] is None:
            continue
        tolerance = max(b["sd"] or 0.0, o["sd"] or 0.0)
        rows.append({"metric": "priced total (core·h)", "figures": {bound: b, other: o},
                     "goal": f"{bound} ≤ {other} within the seeds' spread (±{tolerance:,.0f})",
                     "met": b["mean"] - o["mean"] <= tolerance})  # fmt: skip
    return rows


def nested(flat: dict[str, Any]) -> dict[str, Any]:
    """``{"a.b": x}`` as ``{"a": {"b": x}}``: a strategy's means in replay.json's shape."""
    out: dict[str, Any] = {}
    for path, value in flat.items():
        *parents, leaf = path.split(".")
        node = out
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return out


def size_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per size: each strategy's mean of every metric (replay.json's shape), its standard
    deviation over the seeds (``spread``, by dotted path), and the checks."""
    names = list(runs[0]["strategies"]) if runs else []
    figures = {n: {path: spread(runs, n, path) for _, path, _ in AVERAGED} for n in names}
    order = sorted(names, key=lambda n: figures[n][PRICED]["mean"] or float("inf"))
    means = {n: nested({p: f["mean"] for p, f in figures[n].items()}) for n in names}
    hybrid = hybrid_rows(runs, means) if {"hybrid", "scouts"} <= set(names) else []
    bounds = bound_rows(runs)
    checks: dict[str, Any] = {
        "hybrid_vs_scouts": {
            "rows": hybrid,
            "all_met": all(r["met"] for r in hybrid),
            "model_misses": model_misses(hybrid),
        },
        "bounds": {"rows": bounds, "all_met": all(r["met"] for r in bounds)},
    }
    if {"online", "hybrid"} <= set(names):
        checks["online_vs_hybrid"] = online_rows(runs, means)
    return {
        "seeds": len(runs),
        "ranking": order,
        "strategies": means,
        "spread": {n: {p: f["sd"] for p, f in figures[n].items()} for n in names},
        "checks": checks,
    }


def online_rows(runs: list[dict[str, Any]], means: dict[str, Any]) -> dict[str, Any]:
    """The online strategy's goals on the seeds' means, each row with both sides' mean
    and spread and the seeds it held in."""
    goals = online_goals(means)
    per_seed = [online_goals(r["strategies"])["rows"] for r in runs]
    for i, row in enumerate(goals["rows"]):
        held = [seed[i]["met"] for seed in per_seed if seed[i]["met"] is not None]
        row["seeds_met"] = f"{sum(held)}/{len(held)}"
        row["figures"] = {n: spread(runs, n, row["path"]) for n in row["figures"]}
    return goals


def sizes_report(
    sizes: list[int], seeds: int, workdir: Path, settings: Settings, share: float, demo_seed: int
) -> dict[str, Any]:
    """``runs[size][seed]`` and ``sizes[size]`` (``replay.py``'s docstring)."""
    runs: dict[str, dict[str, Any]] = {}
    summary: dict[str, Any] = {}
    for size in sorted(sizes, reverse=True):  # the largest first: the headline's figures
        folder = demo_folder(size, workdir, demo_seed)
        runs[str(size)] = {str(s): one_run(folder, settings, s, share) for s in range(seeds)}
        summary[str(size)] = size_summary(list(runs[str(size)].values()))
    return {
        "benchmark": "replay_sizes",
        "policy": settings.replay.policy,
        "share": share,
        "allocation": settings.allocation.model_dump(),
        "target_utilisation": settings.replay.target_utilisation,
        "sizes": summary,
        "runs": runs,
    }


def recheck(path: Path) -> None:
    """A ``--sizes`` result's per-size summaries and checks computed again from the runs it
    keeps, written back in place (atomically): a new check reaches earlier runs without
    replaying them. The runs and the machine record are left as they were."""
    text = path.read_text()
    document = json.loads(text)
    second = text.splitlines()[1] if text.count("\n") > 1 else ""
    indent = len(second) - len(second.lstrip(" ")) or 1  # the file's own layout
    if "runs" not in document:
        raise SystemExit(f"{path}: not a --sizes result (no 'runs')")
    document["sizes"] = {
        size: size_summary(list(runs.values())) for size, runs in document["runs"].items()
    }
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(
        json.dumps(document, indent=indent, default=float, ensure_ascii=text.isascii()) + "\n"
    )
    staging.replace(path)
