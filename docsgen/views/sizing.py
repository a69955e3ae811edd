"""The online sizing benchmarks' results views: scoutless against the published
allocators, per seed and workflow; the online sizer's cost and state at scale, and what its
cap costs."""

from __future__ import annotations

from typing import Any

from docsgen.results_pages import (
    Table,
    at,
    figure,
    fmt,
    label,
    records,
)
from docsgen.views.peers import peers_code_tables
from docsgen.views.spread import strip_plot
from docsgen.views.tradeoff import curve_plot

SIZING_METHODS = (
    "scoutless", "scoutless_cold", "users_presets", "users_presets_fair", "witt_percentile",
    "witt_lr_std", "witt_lr_std_own", "witt_lr_std_under", "witt_lr_std_under_own", "tovar",
    "jedi", "vpa", "witt_lwr",
)  # fmt: skip


def sizing_tables(doc: dict[str, Any]) -> list[Table]:
    """Per seed: scoutless against the best published baseline; then every method's
    wastage and failures per workflow."""
    tables = spread_tables(doc)
    # walltime cells are in core-hours, memory's in GB·h (the JSON's keys say which)
    unit, shown = ("core_h", "core-hours") if doc.get("resource") == "walltime" else ("gbh", "GB·h")
    for seed, run in (doc.get("runs") or {}).items():
        base = ("runs", seed, "workflows")
        names = list(at(doc, base) or {})
        goal_cols = ("best_baseline", f"baseline_wastage_{unit}", "baseline_failures", "ratio",
                     "wastage_met", "failures_met")  # fmt: skip
        rows = [
            [
                label(wf),
                figure(doc, (*base, wf, "methods", "scoutless", f"wastage_{unit}")),
                figure(doc, (*base, wf, "methods", "scoutless", "failures")),
                *(figure(doc, (*base, wf, "goal", "scoutless", c)) for c in goal_cols),
            ]
            for wf in names
        ]
        note = "median ratio: " + fmt(at(run, ("summary", "median_ratio")))
        tables.append(Table(
            f"Seed {seed}: scoutless against the best published baseline",
            ["workflow", shown, "failures", *goal_cols], rows,
            f"{note} (goal ≤ 0.6); {shown} wasted over the online 70 % of each workflow.",
        ))  # fmt: skip
        for value, what in (
            (f"wastage_{unit}", f"{shown} wasted"),
            ("failures", "failed attempts"),
        ):
            methods = [m for m in SIZING_METHODS if any(
                isinstance(at(doc, (*base, wf, "methods", m)), dict) for wf in names)]  # fmt: skip
            rows = [
                [label(wf), *(figure(doc, (*base, wf, "methods", m, value)) for m in methods)]
                for wf in names
            ]
            tables.append(Table(f"Seed {seed}: {what} by method", ["workflow", *methods], rows))
    return tables


def spread_tables(doc: dict[str, Any]) -> list[Table]:
    """Over every workflow-seed cell: the median ratio with its bootstrap interval, then the
    ratio per workflow and seed (plotted: one point per seed) and the best baseline of each."""
    cells = at(doc, ("over_cells", "cells")) or []
    if not cells:
        return []
    head = ("cells", "median", "low", "high", "wastage ≤ best (share)", "failures ≤ best (share)")
    paths = [("over_cells", "count"), *(("over_cells", "median_ratio", k) for k in
             ("median", "low", "high")), ("over_cells", "wastage_met_share"),
             ("over_cells", "failures_met_share")]  # fmt: skip
    seeds = [str(s) for s in doc.get("seeds", [])]
    where = {(str(c["seed"]), c["workflow"]): i for i, c in enumerate(cells)}
    flows = sorted({c["workflow"] for c in cells})
    ratio_rows, best_rows = [], []
    for wf in flows:
        idx = [where.get((s, wf)) for s in seeds]
        ratio_rows.append([label(wf), *(figure(doc, ("over_cells", "cells", i, "ratio"))
                                        if i is not None else label("—") for i in idx)])  # fmt: skip
        best_rows.append([label(wf), *(figure(doc, ("over_cells", "cells", i, "best_baseline"))
                                       if i is not None else label("—") for i in idx)])  # fmt: skip
    plot = strip_plot(
        {wf: [c["ratio"] for c in cells if c["workflow"] == wf] for wf in flows},
        {"goal 0.6": 0.6, "1": 1.0}, "scoutless ÷ best baseline (GB·h)",
    )  # fmt: skip
    return [
        Table("Over every workflow-seed cell", head, [[figure(doc, p) for p in paths]],
              "The median of scoutless's wastage ÷ the best baseline's, with its 95 % "
              "bootstrap interval (the cells resampled); the goal: median ≤ 0.6, upper end "
              "≤ 0.7, wastage at or below the best on ≥ 90 % of the cells."),
        Table("Ratio per workflow and seed", ["workflow", *seeds], ratio_rows,
              "One point per seed in the plot; the best baseline is the least wasteful of "
              "every online baseline (the users' presets charged fairly, Witt percentile, "
              "Witt-LR std as coded and with its own list, std-under without its look-ahead, "
              "Tovar, JEDI, VPA, Witt's low-wastage regression).", svg=plot),
        Table("The best baseline per workflow and seed", ["workflow", *seeds], best_rows),
        *lwr_tables(doc), *cold_tables(doc), *beside_tables(doc), *constants_tables(doc),
        *trade_tables(doc), *peers_code_tables(doc),
    ]  # fmt: skip


def cold_tables(doc: dict[str, Any]) -> list[Table]:
    """scoutless sized cold (none of the workflow's own history) against the best of every
    warm baseline: the same set as the goal."""
    cold = at(doc, ("over_cells", "cold", "cells")) or []
    if not cold:
        return []
    base = ("over_cells", "cold", "cells")
    cols = ("ratio", "best_baseline", "wastage_met", "failures_met")
    rows = [[label(c["seed"]), label(c["workflow"]), *(figure(doc, (*base, i, k)) for k in cols)]
            for i, c in enumerate(cold)]  # fmt: skip
    return [Table(
        "Cold (no history of its own) against the best warm baseline", ["seed", "workflow", *cols],
        rows, f"wastage at or below the best on {fmt(at(doc, ('over_cells', 'cold', 'wastage_met')))}"
        f" of {len(cold)} cells, failures at or below its on "
        f"{fmt(at(doc, ('over_cells', 'cold', 'failures_met')))} (goal: ≥ 5 and ≥ 4 of 6); the "
        "best is the least wasteful of every online baseline, each knowing the workflow's history.",
    )]  # fmt: skip


def trade_tables(doc: dict[str, Any]) -> list[Table]:
    """The failure penalty as a trade: scoutless's (wastage, failures) curve per cell and the
    online baselines it does not dominate; plotted for the first seed."""
    cells = at(doc, ("trade_off", "cells")) or []
    if not cells:
        return []
    base = ("trade_off", "cells")
    penalties = at(doc, ("trade_off", "penalties")) or []
    unit = next(k for k in cells[0]["curve"][0] if k.startswith("wastage_"))
    rows = [[label(c["seed"]), label(c["workflow"]),
             *(figure(doc, (*base, i, "curve", j, key)) for j in range(len(penalties))
               for key in (unit, "failures")),
             figure(doc, (*base, i, "not_dominated")), figure(doc, (*base, i, "met"))]
            for i, c in enumerate(cells)]  # fmt: skip
    heads = [f"{p:g}: {k}" for p in penalties for k in ("wastage", "failures")]
    first = cells[0]["seed"]
    plot = curve_plot(
        {c["workflow"]: ([(p[unit], p["failures"]) for p in c["curve"]],
                         {b: (v[unit], v["failures"]) for b, v in c["baselines"].items()})
         for c in cells if c["seed"] == first},
        unit.replace("wastage_", "wasted "), "failures",
    )  # fmt: skip
    note = (f"scoutless at failure penalties {', '.join(f'{p:g}' for p in penalties)} (the "
            f"prior weight {fmt(at(doc, ('trade_off', 'prior_weight')))}); met: every online "
            "baseline (not the oracle, not the users' presets, which never fail) is at or "
            "above some point of the curve on both wastage and failures. Cells met: "
            f"{fmt(at(doc, ('trade_off', 'met')))} of {fmt(at(doc, ('trade_off', 'count')))} "
            f"(goal ≥ 90 %). The plot: seed {first}.")  # fmt: skip
    title = "Failures as a trade: scoutless's curve against the online baselines"
    heads = ["seed", "workflow", *heads, "not dominated", "met"]
    return [Table(title, heads, rows, note, svg=plot)]


#: the parts sized beside the main cells: the key in a seed's run, the table's title
BESIDE = {
    "live": "The live protocol (submission order, outcomes at completion) beside the peers'",
    "submission": "From what is known before the run (`--features submission`) beside "
    "`rchar`, the bytes read during the run",
}


def beside_tables(doc: dict[str, Any]) -> list[Table]:
    """Each part sized beside the main cells: scoutless's ratio to the best baseline there,
    the main cell's beside it, and the median with its interval over the part's cells."""
    tables = []
    for part, title in BESIDE.items():
        rows = []
        for seed, run in (doc.get("runs") or {}).items():
            for wf, cell in (run.get(part) or {}).items():
                if "goal" not in cell:
                    continue
                there, main = (
                    ("runs", seed, part, wf, "goal", "scoutless"),
                    ("runs", seed, "workflows", wf, "goal", "scoutless"),
                )
                rows.append([label(seed), label(wf), figure(doc, (*there, "ratio")),
                             figure(doc, (*there, "best_baseline")),
                             figure(doc, (*there, "failures_met")), figure(doc, (*main, "ratio"))])  # fmt: skip
        if rows:
            median = ("over_cells", part, "median_ratio")
            tables.append(Table(title, ["seed", "workflow", f"{part} ratio",
                                        f"{part} best baseline", "failures met", "main ratio"],
                                rows, f"median over these cells: {fmt(at(doc, (*median, 'median')))} "
                                f"[{fmt(at(doc, (*median, 'low')))}, {fmt(at(doc, (*median, 'high')))}]"))  # fmt: skip
    return tables


def constants_tables(doc: dict[str, Any]) -> list[Table]:
    """The failure penalty and prior weight: the sensitivity table and the leave-one-out choice."""
    table = at(doc, ("constants", "table")) or {}
    if not any(v.get("cells") for v in table.values()):
        return []
    base = ("constants", "table")
    rows = [[label(k), *(figure(doc, (*base, k, c)) for c in ("median_ratio", "failures", "cells"))]
            for k in table]  # fmt: skip
    chosen = at(doc, ("constants", "chosen")) or {}
    picks = [[label(wf), figure(doc, ("constants", "chosen", wf, "setting"))] for wf in chosen]
    return [
        Table("Sensitivity of scoutless to its constants", ["setting", "median ratio", "failures", "cells"],
              rows, "ratio: scoutless's wastage ÷ the best baseline's, per workflow-seed cell."),
        Table("Constants chosen leaving one workflow out", ["workflow", "setting"], picks,
              f"{at(doc, ('constants', 'rule'))}; median ratio so: "
              + fmt(at(doc, ("constants", "median_ratio")))),
    ]  # fmt: skip


def lwr_tables(doc: dict[str, Any]) -> list[Table]:
    """Witt's low-wastage regression run as published (offline, its own split, peak_rss)
    beside the figures Sizey's code reports for it, and beside the online row."""
    tables = []
    for seed in doc.get("runs") or {}:
        base = ("runs", seed, "workflows")
        names = [wf for wf in at(doc, base) or {} if at(doc, (*base, wf, "offline"))]
        if not names:
            continue
        rows = [[label(wf),
                 figure(doc, (*base, wf, "offline", "witt_lwr", "wastage_gbh")),
                 figure(doc, (*base, wf, "offline", "witt_lwr", "failures")),
                 figure(doc, ("witt_lwr_cited", wf, "wastage_gbh")),
                 figure(doc, ("witt_lwr_cited", wf, "failures")),
                 figure(doc, (*base, wf, "methods", "witt_lwr", "wastage_gbh")),
                 figure(doc, (*base, wf, "methods", "witt_lwr", "failures"))]
                for wf in names]  # fmt: skip
        tables.append(Table(
            f"Seed {seed}: Witt's low-wastage regression, offline as published and online",
            ["workflow", "offline GB·h", "offline failures", "Sizey's code GB·h",
             "Sizey's code failures", "online GB·h", "online failures"], rows,
            "Offline: fitted once on `sample(frac=0.3)` of each type, `peak_rss` as the need "
            "(Sizey's `witt_low_wastage.py`; its code's figures at seed 1996 beside). Online: "
            "the protocol's instances, `rss`, refitted each time the needs seen double.",
        ))  # fmt: skip
    return tables


#: the online benchmark's checkpoint columns, in the order a reader compares them
ONLINE_COLUMNS = (
    "jobs", "outcomes", "segment_ms_per_job", "cumulative_ms_per_job", "rss_mb",
    "state_bytes_per_type_median", "outcomes_largest_type", "state_bytes_largest_type",
    "state_bytes_per_outcome",
)  # fmt: skip


def online_tables(doc: dict[str, Any]) -> list[Table]:
    """The online sizer's cost at scale: the run's totals, then how cost and state grow with the
    outcomes learnt."""
    cols = ("commit", "max_outcomes_per_type", "jobs", "tasks", "types", "outcomes",
            "ms_per_job", "ms_per_job_last_segment", "rss_mb")  # fmt: skip
    growth = ("state_bytes_per_added_outcome", "rss_bytes_per_added_outcome",
              "state_bytes_per_type_first", "state_bytes_per_type_last",
              "outcomes_per_type_first", "outcomes_per_type_last")  # fmt: skip
    return [
        Table("The run", cols, [[figure(doc, (c,)) for c in cols]],
              "CPU time of decision + update (allocate, each kill and retry, the outcome), "
              "one core, amortised over the jobs."),
        Table("State growth", growth, [[figure(doc, ("growth", c)) for c in growth]],
              "between the first and the last checkpoint"),
        records(doc, ("checkpoints",), ONLINE_COLUMNS, "At each checkpoint",
                "segment: the jobs since the checkpoint before"),
    ]  # fmt: skip


def sizing_cap_tables(doc: dict[str, Any]) -> list[Table]:
    """Wastage with every outcome kept, with the default cap and with a tight one."""
    summary = at(doc, ("summary",)) or {}
    caps = [f"cap_{summary.get('default_cap')}", f"cap_{summary.get('tight_cap')}"]
    cols = ("workflow", "seed", "uncapped_gbh", "uncapped_failures",
            *(f"{c}_{k}" for c in caps for k in ("gbh", "failures", "ratio")))  # fmt: skip
    heads = tuple(summary)
    return [
        Table("Summary", heads, [[figure(doc, ("summary", c)) for c in heads]],
              "worst gap: the largest wastage over the uncapped one's, less 1"),
        records(doc, ("rows",), cols, "Per workflow and seed", "GB·h wasted; ratio: over uncapped"),
    ]  # fmt: skip


def sizing_refresh_tables(doc: dict[str, Any]) -> list[Table]:
    """Wastage and CPU time with every sample rebuilt per outcome and with the default share."""
    heads = tuple(at(doc, ("summary",)) or {})
    cols = ("workflow", "seed", "every_gbh", "every_failures", "default_gbh",
            "default_failures", "ratio", "every_cpu_s", "default_cpu_s", "speedup")  # fmt: skip
    return [
        Table("Summary", heads, [[figure(doc, ("summary", c)) for c in heads]],
              "worst gap: the largest wastage over the rebuild-every-outcome one's, less 1 "
              "(goal: within 2 %); speedup: CPU seconds of the whole walk, rebuilt every "
              "outcome over the default share"),
        records(doc, ("rows",), cols, "Per workflow and seed",
                "GB·h wasted; every: the samples rebuilt at every outcome (share 0); default: "
                "rebuilt when the share of outcomes since the anchor is reached"),
    ]  # fmt: skip


def sizing_reference_tables(doc: dict[str, Any]) -> list[Table]:
    """The engine online beside itself with the rest of the stream known ahead."""
    heads = tuple(at(doc, ("summary",)) or {})
    folds = at(doc, ("folds",)) or []
    cols = ("workflow", "seed", "best_baseline", "baseline_gbh", "online_ratio",
            *(f"{k}_ratio" for k in folds), "online_failures", *(f"{k}_failures" for k in folds))  # fmt: skip
    return [
        Table("Summary", heads, [[figure(doc, ("summary", c)) for c in heads]],
              "median over the cells of the engine's wastage ÷ the best baseline's: online "
              "(as the sizing benchmark runs it) and with each fold count (k: the type's "
              "online instances dealt into k folds by position, b: into k contiguous "
              "stretches, each sized knowing the others' outcomes up front and learning "
              "nothing); failures in all"),
        Table("The medians' 95 % intervals", ("sizer", "median", "low", "high"),
              [[label(k), *(figure(doc, ("intervals", k, c)) for c in ("median", "low", "high"))]
               for k in at(doc, ("intervals",)) or {}],
              "the cells resampled with replacement (the sizing benchmark's bootstrap)"),
        records(doc, ("rows",), cols, "Per workflow and seed",
                "ratios ÷ the best baseline of the cell (the sizing benchmark's JSON)"),
    ]  # fmt: skip


def online_restart_tables(doc: dict[str, Any]) -> list[Table]:
    """The sizer's state across restarts: whether the killed run allocated as the
    uninterrupted one, then what the database costs per event beside memory."""
    run = ("outcomes", "types", "restarts", "events_reported", "events_reported_twice",
           "events_missing", "mismatches", "identical")  # fmt: skip
    cost = ("ms_per_allocation", "ms_per_learn", "ms_per_learn_over_memory")
    stored = ("types", "outcomes_committed", "state_bytes", "state_bytes_per_type_mean",
              "state_bytes_per_type_max")  # fmt: skip
    backends = [b for b in ("memory", "sqlite", "postgresql") if b in doc]
    return [
        Table("Killed and restarted", run, [[figure(doc, (c,)) for c in run]],
              "every allocation a process printed for an event, against the uninterrupted "
              "run's; an event printed twice was sized again after a kill"),
        Table("Cost per event (ms)", ["sizer", *cost],
              [[label(b), *(figure(doc, (b, c)) if c in doc[b] else label("")
                            for c in cost)] for b in backends],
              "allocation: first (and the retry after a kill); learn: the outcome learnt "
              "and, in a database, committed"),
        Table("In the database at the end", stored,
              [[figure(doc, ("stored", c)) for c in stored]]),
    ]  # fmt: skip
