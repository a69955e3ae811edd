"""The engine's two constants chosen by a stated rule, for `sizing.py`: the failure penalty
and the prior's weight over a small grid, each workflow's figure taken at the setting that
does best on the *other* workflows (leave one workflow out), and the whole grid as the
sensitivity table. "Best" is the least geometric mean of scoutless ÷ the best baseline
over the other workflows' cells at the seeds run.

The failure penalty is also the one setting that trades wastage for failures: at
`TRADE_PENALTIES` (the prior weight at its default) scoutless draws a curve of (wastage,
failures) per workflow and seed, and `trade_off` asks of each cell whether every online
baseline's point (not the oracle, not the users' presets, which never fail) is dominated
by a point of that curve: at or below it on both."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from scoutless.config import Settings
from scoutless.sizing.protocol import task_types
from scoutless.sizing.resources import MEMORY, Resource
from scoutless.sizing.run import GOAL_BASELINES, run_types, warm_sizer

#: the failure penalties and prior weights tried (the configured ones among them)
PENALTIES = (0.0, 0.25, 1.0)
PRIOR_WEIGHTS = (0.0, 4.0)
#: the failure penalties the trade-off curve is drawn at (the default 0.25 among them):
#: from no price on a failure beyond the protocol's to 64 × the median need × runtime
TRADE_PENALTIES = (0.0, 0.25, 4.0, 16.0, 64.0)
#: the goal baselines that never fail (so no curve needs to dominate them on failures)
NEVER_FAIL = ("users_presets_fair",)


def setting_name(penalty: float, prior: float) -> str:
    return f"penalty={penalty:g},prior_weight={prior:g}"


def grid() -> dict[str, tuple[float, float]]:
    return {setting_name(p, w): (p, w) for p in PENALTIES for w in PRIOR_WEIGHTS}


def trade_settings(prior: float) -> dict[str, tuple[float, float]]:
    """The trade-off curve's settings: each of `TRADE_PENALTIES` at the prior weight ``prior``."""
    return {setting_name(p, prior): (p, prior) for p in TRADE_PENALTIES}


def sensitivity_cell(
    frame: pd.DataFrame, name: str, seed: int, *, settings: Settings,
    resource: Resource = MEMORY, features: str = "peers-rchar",
) -> dict[str, Any]:  # fmt: skip
    """scoutless's wastage (the resource's unit) and failures on one workflow at one seed
    per setting of the grid and of the trade-off curve, the other constants ``settings``'."""
    types = task_types(frame, seed, name, resource, features)
    waste = f"wastage_{resource.unit}"
    out = {}
    for key, (penalty, prior) in (grid() | trade_settings(settings.sizing.prior_weight)).items():
        update = {"failure_penalty": penalty, "prior_weight": prior}
        sized = warm_sizer(types, settings.sizing.model_copy(update=update), resource)
        cell = run_types(types, [sized], resource)["methods"]["scoutless"]
        out[key] = {waste: cell[waste], "failures": cell["failures"]}
    return out


def leave_one_out(runs: dict[str, Any], unit: str = "gbh") -> dict[str, Any]:
    """Per workflow the setting chosen on the other workflows and its ratios there; the
    sensitivity table (per setting: the median ratio and the failures in all); ``unit``:
    the sized resource's (`Resource.unit`)."""
    ratios: dict[str, dict[tuple[str, str], float]] = {k: {} for k in grid()}
    fails: dict[str, int] = dict.fromkeys(grid(), 0)
    for seed, run in runs.items():
        for wf, cells in (run.get("sensitivity") or {}).items():
            main = run["workflows"].get(wf)
            if main is None:
                continue
            best = main["goal"]["scoutless"][f"baseline_wastage_{unit}"]
            for key, cell in ((k, c) for k, c in cells.items() if k in ratios):
                ratios[key][(seed, wf)] = cell[f"wastage_{unit}"] / best if best > 0 else np.inf
                fails[key] += cell["failures"]
    flows = sorted({wf for r in ratios.values() for _, wf in r})
    chosen = {}
    for wf in flows:
        score = {k: np.mean([np.log(v) for (s, w), v in r.items() if w != wf] or [np.inf])
                 for k, r in ratios.items()}  # fmt: skip
        key = min(score, key=score.get)
        chosen[wf] = {"setting": key, "ratios": {s: v for (s, w), v in ratios[key].items() if w == wf}}
    loo = [v for c in chosen.values() for v in c["ratios"].values()]
    return {
        "rule": "each workflow at the setting with the least geometric-mean ratio on the others",
        "chosen": chosen,
        "median_ratio": float(np.median(loo)) if loo else None,
        "table": {k: {"median_ratio": float(np.median(list(r.values()))) if r else None,
                      "failures": fails[k], "cells": len(r)} for k, r in ratios.items()},
    }  # fmt: skip


def trade_off(
    runs: dict[str, Any], prior: float, resource: Resource = MEMORY
) -> dict[str, Any]:  # fmt: skip
    """Per workflow-seed cell with the curve: scoutless's (wastage, failures) at each of
    `TRADE_PENALTIES` (prior weight ``prior``), the online baselines' points, the ones no
    point of the curve dominates (≤ on both); over the cells the share where none is left."""
    unit = f"wastage_{resource.unit}"
    keys = trade_settings(prior)
    online = [b for b in GOAL_BASELINES[resource.name] if b not in NEVER_FAIL]
    cells = []
    for seed, run in runs.items():
        for wf, sens in (run.get("sensitivity") or {}).items():
            main = run["workflows"].get(wf)
            if main is None or not all(k in sens for k in keys):
                continue
            curve = [{"penalty": p, unit: sens[k][unit], "failures": sens[k]["failures"]}
                     for k, (p, _) in keys.items()]  # fmt: skip
            points = {b: {unit: main["methods"][b][unit], "failures": main["methods"][b]["failures"]}
                      for b in online if b in main["methods"]}  # fmt: skip
            left = [b for b, pt in points.items() if not any(
                c[unit] <= pt[unit] and c["failures"] <= pt["failures"] for c in curve)]  # fmt: skip
            cells.append({"seed": int(seed), "workflow": wf, "curve": curve, "baselines": points,
                          "not_dominated": left, "met": not left})  # fmt: skip
    met = sum(c["met"] for c in cells)
    return {
        "setting": "failure_penalty", "penalties": list(TRADE_PENALTIES), "prior_weight": prior,
        "baselines": online, "cells": cells, "count": len(cells), "met": met,
        "met_share": met / len(cells) if cells else None,
    }  # fmt: skip
