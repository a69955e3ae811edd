"""A rollout rehearsed: the replay's canary written as PanDA's records, read by ``monitor impact``.

A bundle is trained on one synthetic history; a second history (other seed, the demo's
statistics) is replayed with the ``canary`` strategy (share 0.5) at two sizes, each written
with ``--write-history`` into its own SQLite file and read back by ``monitor impact``. The
small replay is the large one's first tasks by creation (the same load on the same size of
pool: a random quarter of the tasks would run on a quarter of the pool, another system).
Prints JSON: per size, the largest relative difference between the impact's per-arm
figures and the replay's own (same tasks, same definitions: rounding only), the canary −
control differences with their bootstrap intervals, and how much the intervals narrow from
the small to the large replay: √(large / small) for figures whose tasks weigh alike (2 for
2,000 → 8,000), √ of the ratio of *effective* tasks for a ratio of sums (Kish's
(Σ den)² ÷ Σ den²: a task with many jobs weighs more in first-attempt success).

The rehearsal runs once per canary arm (``replay.canary_arm``, ``--arms``) on the same
history, bundle, seed and sizes: the first arm's runs are the figures above (``runs``),
every arm's are under ``arms``. With ``online`` and ``control`` among them, ``rehearsal``
judges the online arm against an A/A rehearsal (the canary's tasks run as the control's,
the same draw): per size, the online arm's memory kills per job, canary − control, with
its interval, and the A/A interval's half-width ((hi − lo) ÷ 2, the difference the draw's
noise alone makes); the goal is the online interval's upper end below that half-width.

    python benchmarks/canary.py [--tasks 2000 8000] [--train-tasks 4000]
        [--arms selective online control] [--out results/canary.json]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from record import add_out, emit, reference_loop_s
from scoutless.bundle import load_bundle
from scoutless.config import Settings, get_settings
from scoutless.history.build import build_table_from_db
from scoutless.history.panda_db import make_engine
from scoutless.history.synthetic import generate_history
from scoutless.ops.impact import impact_report
from scoutless.ops.impact_store import collect_impact
from scoutless.ops.rehearsal import write_rehearsal
from scoutless.replay.canary import IMPACT_FIGURES
from scoutless.replay.runner import replay_history


def _history(path: Path, n: int, seed: int) -> str:
    url = f"sqlite:///{path}"
    engine = make_engine(url)
    generate_history(engine, n, seed=seed, progress=False)
    engine.dispose()
    return url


def _largest_gap(arms: dict, per_arm) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """Largest |impact − replay| ÷ |replay| over the arms' figures, and how many compared."""
    got = per_arm.set_index(["arm", "figure"])["value"]
    worst, n = 0.0, 0
    for arm, entry in arms.items():
        for figure in IMPACT_FIGURES:
            want = entry["figures"][figure]
            have = float(got.get((arm, figure), math.nan))
            if want is None:
                worst = max(worst, 0.0 if math.isnan(have) else math.inf)
                continue
            worst = max(worst, abs(have - want) / max(abs(want), 1e-12))
            n += 1
    return worst, n


def _effective_tasks(parts, arms) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Per figure, Kish's effective number of tasks of the canary and control arms together
    (harmonic: the interval of a difference is as wide as its smaller arm allows)."""
    out = {}
    for figure in IMPACT_FIGURES:
        per_arm = []
        for arm in ("canary", "control"):
            den = parts.loc[arms == arm, f"{figure}_den"].to_numpy()
            per_arm.append(den.sum() ** 2 / (den**2).sum() if (den**2).sum() > 0 else 0.0)
        out[figure] = 2 / sum(1 / n for n in per_arm) if min(per_arm) > 0 else 0.0
    return out


def _first_tasks(url: str, n: int) -> np.ndarray:
    """The ids of the history's first ``n`` tasks by creation."""
    from sqlalchemy import select

    from scoutless.history.schema import jedi_tasks

    engine = make_engine(url, read_only=True)
    t = jedi_tasks
    with engine.connect() as conn:
        stmt = select(t.c.jeditaskid).order_by(t.c.creationdate, t.c.jeditaskid).limit(n)
        ids = np.asarray(conn.execute(stmt).scalars().all(), dtype=np.int64)
    engine.dispose()
    return ids


def _rehearse(url: str, bundle, n: int, folder: Path, settings) -> dict:  # type: ignore[no-untyped-def]
    from scoutless.replay.canary import task_parts

    kept = []
    started = time.perf_counter()
    document = replay_history(url, bundle, folder, settings, only=_first_tasks(url, n),
                              rehearse=kept.append)  # fmt: skip
    replay_s = time.perf_counter() - started
    target = f"sqlite:///{folder / 'written.sqlite'}"
    written = write_rehearsal(kept[0], url, target, settings, bins=bundle.bins)
    engine = make_engine(target)
    collect_impact(engine)
    report = impact_report(engine, every="30D", settings=settings.rollout)
    engine.dispose()
    arms = document["strategies"]["canary"]["arms"]
    gap, compared = _largest_gap(arms, report.per_arm)
    r = kept[0]
    effective = _effective_tasks(task_parts(r.result, r.work, r.predicted_ram,
                                            r.predicted_cputime), r.arms)  # fmt: skip
    return {
        "effective_tasks": effective,
        "tasks": document["workload"]["tasks"], "jobs_written": written.jobs,
        "replay_s": round(replay_s, 1), "arms": {a: e["n_tasks"] for a, e in arms.items()},
        "largest_relative_gap": gap, "figures_compared": compared,
        "differences": {d.figure: {"value": d.value, "lo": d.lo, "hi": d.hi,
                                   "width": d.hi - d.lo} for d in report.differences},
    }  # fmt: skip


def _narrowing(small: dict, large: dict) -> dict:
    """Width ratios (small ÷ large) per figure against √n and √(effective n); the checks."""
    ratios, by_n, by_effective = {}, {}, {}
    root_n = math.sqrt(large["tasks"] / small["tasks"])
    for figure in IMPACT_FIGURES:
        a, b = small["differences"].get(figure), large["differences"].get(figure)
        if a is None or b is None or not (np.isfinite(b["width"]) and b["width"] > 0):
            continue
        ratios[figure] = a["width"] / b["width"]
        by_n[figure] = ratios[figure] / root_n
        n_small, n_large = small["effective_tasks"][figure], large["effective_tasks"][figure]
        by_effective[figure] = ratios[figure] / math.sqrt(n_large / n_small)
    median_n = float(np.median(list(by_n.values())))
    median_eff = float(np.median(list(by_effective.values())))
    gap = max(small["largest_relative_gap"], large["largest_relative_gap"])
    return {
        "width_ratio_by_figure": ratios, "width_ratio_expected": root_n,
        "width_ratio_over_sqrt_n": by_n, "width_ratio_over_sqrt_effective_n": by_effective,
        "checks": {
            "equal_within_rounding": {"value": gap, "goal": "≤ 0.002", "met": gap <= 2e-3},
            "narrows_as_sqrt_n": {"value": median_n, "goal": "median width ratio / sqrt(n "
                                  "ratio) within [0.75, 1.25]", "met": 0.75 <= median_n <= 1.25},
            "narrows_as_sqrt_effective_n": {
                "value": median_eff, "goal": "the same over sqrt(effective n ratio)",
                "met": 0.75 <= median_eff <= 1.25},
        },
    }  # fmt: skip


def _rehearsal_goal(online: dict, control: dict) -> dict:
    """Per size: the online arm's memory kills per job (canary − control) against the A/A
    rehearsal's half-width; met where the online interval's upper end lies below it."""
    out = {}
    for size, run in online.items():
        got, aa = run["differences"]["memory_kills"], control[size]["differences"]["memory_kills"]
        half = (aa["hi"] - aa["lo"]) / 2
        out[size] = {
            "online": {k: got[k] for k in ("value", "lo", "hi")},
            "aa": {k: aa[k] for k in ("value", "lo", "hi")}, "aa_half_width": half,
            "margin": half - got["hi"], "met": got["hi"] < half, "below_zero": got["hi"] < 0,
            "arms": run["arms"], "aa_arms": control[size]["arms"],
        }  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, nargs=2, default=[2000, 8000])
    parser.add_argument("--train-tasks", type=int, default=4000)
    parser.add_argument("--arms", nargs="+", default=["selective", "online", "control"],
                        choices=("selective", "hybrid", "online", "control"),
                        help="the canary's arms rehearsed (the first: the narrowing's)")  # fmt: skip
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    from scoutless.training import train_bundle

    small, large = sorted(args.tasks)
    settings = get_settings()
    cfg = settings.replay.model_copy(update={"strategies": ["canary"], "canary_share": 0.5})
    settings = settings.model_copy(update={"replay": cfg})
    runs: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        train_url = _history(folder / "train.sqlite", args.train_tasks, seed=5)
        table, _ = build_table_from_db(make_engine(train_url), settings=Settings())
        train_bundle(
            table,
            folder / "bundle",
            models=("xgb",),
            trials=0,
            progress=False,
            n_jobs=2,
            settings=Settings(),
        )
        bundle = load_bundle(folder / "bundle")
        url = _history(folder / "replay.sqlite", large, seed=9)
        for arm in args.arms:
            armed = settings.model_copy(update={
                "replay": cfg.model_copy(update={"canary_arm": arm})})  # fmt: skip
            runs[arm] = {}
            for n in (small, large):
                (folder / arm / str(n)).mkdir(parents=True)
                runs[arm][str(n)] = _rehearse(url, bundle, n, folder / arm / str(n), armed)
    first = runs[args.arms[0]]
    result = {"arm": args.arms[0], "runs": first,
              **_narrowing(first[str(small)], first[str(large)]),
              "arms": {arm: {"runs": r} for arm, r in runs.items()}}  # fmt: skip
    if "online" in runs and "control" in runs:
        result["rehearsal"] = _rehearsal_goal(runs["online"], runs["control"])
    emit(result, args.out, loop_before, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
