"""The real-ATLAS-jobs benchmark's results view: each task's waste, kills and slack by
side and kill factor; the goals, with what each allows whatever sizes the task; the lag's
share of a miss and the failure penalty's; the peers' protocol against the jedi baseline."""

from __future__ import annotations

from typing import Any

from docsgen.results_pages import Table, at, figure, label

#: the real-ATLAS-jobs benchmark's sides, in the order a reader compares them
ATLAS_SIDES = ("recorded", "ladder", "engine")


def atlas_jobs_tables(doc: dict[str, Any]) -> list[Table]:
    """Per kill factor, each task's waste, kills and slack by side; the goals per task; the
    peers' protocol against the jedi baseline."""
    tasks = list(at(doc, ("tasks",)) or {})
    tables = []
    for factor in at(doc, ("factors",)) or []:
        key = f"{factor:g}"
        for value, what in (("wasted_gbh", "memory GB·h wasted"), ("kills", "kills"),
                            ("slack_gbh", "slack GB·h"),
                            ("wasted_after_lag_gbh", "GB·h wasted once outcomes were known")):  # fmt: skip
            rows = [[label(t), figure(doc, ("tasks", t, "jobs")),
                     *(figure(doc, ("tasks", t, "factors", key, s, value)) for s in ATLAS_SIDES)]
                    for t in tasks]  # fmt: skip
            tables.append(Table(f"Kill factor {key}: {what}", ["task", "jobs", *ATLAS_SIDES],
                                rows))  # fmt: skip
    goal_cols = (("factor_1", "waste_ratio"), ("factor_1", "kills"),
                 ("factor_1", "recorded_kills"), ("factor_1", "waste_met"),
                 ("factor_1", "kills_met"), ("factor_2", "kills"), ("factor_2", "allowed"),
                 ("factor_2", "kills_met"))  # fmt: skip
    tables.append(Table(
        "Goals: the engine against the recorded minramcount",
        ["task", *(f"{g[-1]} ({g[0]})".replace("factor_", "k") for g in goal_cols)],
        [[label(t), *(figure(doc, ("tasks", t, "goals", *g)) for g in goal_cols)]
         for t in tasks],
        "k1: waste ≤ 0.7× the recorded's with fewer kills; k2: kills ≤ max(the recorded's, "
        "1 % of the jobs).",
    ))  # fmt: skip
    bound_cols = ("lag_window_gbh", "lag_window_ratio", "hindsight_gbh", "hindsight_ratio",
                  "hindsight_kills", "bounded_by", "online_pair_ratio", "online_pair_kills")  # fmt: skip
    where = ("goals", "factor_1", "bounds")
    if any(at(doc, ("tasks", t, *where)) for t in tasks):
        tables.append(Table(
            "What the k1 goal allows, whatever sizes the task",
            ["task", "engine (ratio)", *bound_cols],
            [[label(t), figure(doc, ("tasks", t, "goals", "factor_1", "waste_ratio")),
              *(figure(doc, ("tasks", t, *where, c)) for c in bound_cols)] for t in tasks],
            "lag window: the waste of the first jobs, sized from the request alone (no prior, "
            "no outcome yet); hindsight: that window plus, after it, the best first "
            "allocation and retry per core count knowing every job's need (a third attempt "
            "at the largest); ratios ÷ the recorded waste (goal ≤ 0.7). bounded_by: the "
            "first reference that misses the goal too (lag: no sizer that keeps to the "
            "request while it knows nothing meets it; hindsight: none that gives a task's "
            "jobs of one width one allocation does). online pair: the window plus the "
            "hindsight's search run every 50 releases on the outcomes known by then (follow "
            "the leader), a reference, not a bound.",
        ))  # fmt: skip
    sweep = at(doc, ("lag_sweep",)) or {}
    if sweep:
        lags = [*sweep, str(at(doc, ("lag",)))]
        where = {lag: ("lag_sweep", lag, "tasks") for lag in sweep}
        tables.append(Table(
            "k1 waste ratio at shorter feedback lags", ["task", *(f"lag {lag}" for lag in lags)],
            [[label(t), *(figure(doc, (*where[lag], t, "waste_ratio")) if lag in where
                          else figure(doc, ("tasks", t, "goals", "factor_1", "waste_ratio"))
                          for lag in lags)] for t in tasks],
            "the engine's waste ÷ the recorded's at kill factor 1 when a job's outcome is "
            "known that many releases later (the goal's lag last).",
        ))  # fmt: skip
    tables += _penalty_table(doc, tasks)
    peer_cols = ("instances", "scoutless_gbh", "scoutless_failures", "jedi_gbh",
                 "jedi_failures", "met")  # fmt: skip
    peers = list(at(doc, ("peers", "tasks")) or {})
    tables.append(Table(
        "The peers' protocol (seed 1996): scoutless against the jedi baseline",
        ["task", *peer_cols],
        [[label(t), *(figure(doc, ("peers", "tasks", t, c)) for c in peer_cols)]
         for t in peers],
        "GB·h wasted over each task's online 70 %; met: no more waste and no more failures.",
    ))  # fmt: skip
    curve = at(doc, ("peers", "trade_off", "tasks")) or {}
    penalties = at(doc, ("peers", "trade_off", "penalties")) or []
    tables.append(Table(
        "The peers' protocol: scoutless's trade-off curve against jedi's point",
        ["task", "jedi", *(f"penalty {p:g}" for p in penalties), "dominated"],
        [[label(t), label(_point(at(doc, ("peers", "tasks", t, "jedi_gbh")),
                                 at(doc, ("peers", "tasks", t, "jedi_failures")))),
          *(label(_point(p["wastage_gbh"], p["failures"])) for p in v["points"]),
          figure(doc, ("peers", "trade_off", "tasks", t, "dominated"))]
         for t, v in curve.items()],
        "GB·h / failures at each failure penalty (one value for every task at a time); "
        "dominated: some point wastes no more and fails no more than jedi.",
    ))  # fmt: skip
    dropped = sorted({k for t in tasks for k in at(doc, ("tasks", t, "dropped")) or {}})
    tables.append(Table(
        "Rows dropped", ["task", *dropped],
        [[label(t), *(figure(doc, ("tasks", t, "dropped", k)) for k in dropped)] for t in tasks],
    ))  # fmt: skip
    return tables


def _penalty_table(doc: dict[str, Any], tasks: list[str]) -> list[Table]:
    """The k1 goal over the failure penalty (the default's column from the main walk)."""
    sweep = at(doc, ("penalty_sweep",)) or {}
    if not sweep:
        return []
    default = sweep.get("default")
    penalties = sorted({*sweep["penalties"], *([default] if default is not None else [])})

    def cell(task: str, penalty: float) -> str:
        if penalty == default:
            goal = at(doc, ("tasks", task, "goals", "factor_1")) or {}
        else:
            goal = at(doc, ("penalty_sweep", "tasks", task, f"{penalty:g}")) or {}
        ratio, kills = goal.get("waste_ratio"), goal.get("kills")
        return "" if ratio is None else f"{ratio:.3f} ({kills:g})"

    return [Table(
        "k1 waste ratio (kills) over the failure penalty",
        ["task", *(f"penalty {p:g}" + (" (default)" if p == default else "") for p in penalties)],
        [[label(t), *(label(cell(t, p)) for p in penalties)] for t in tasks],
        "sizing.failure_penalty for every task at a time: the engine's trade between waste "
        "and kills at kill factor 1 (goal: ratio ≤ 0.7 with fewer kills than recorded).",
    )]  # fmt: skip


def _point(gbh: float | None, failures: int | None) -> str:
    """A (wastage, failures) point as one cell."""
    return "" if gbh is None else f"{gbh:,.1f} / {failures}"
