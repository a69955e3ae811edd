"""One workflow sized under the peers' protocol, in the shape `scoutless size` writes and
`benchmarks/sizing.py` collects: the methods' cells, per task type, and the goal — the
best of the published baselines (Witt-LR std-under counted without its look-ahead) and
scoutless's wastage and failures against it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from scoutless.config import Settings
from scoutless.sizing.protocol import MIN_ROWS, task_types
from scoutless.sizing.resources import MEMORY, Resource
from scoutless.sizing.run import (
    GOAL_BASELINES,
    baseline_sizers,
    cold_sizer,
    has_requests,
    run_types,
    warm_sizer,
)  # fmt: skip

#: Witt et al.'s low-wastage regression as published with Sizey's code (offline, its own
#: 30 % sample as history, ``peak_rss`` as the need; seed 1996): GB·h, failures. Not
#: reimplemented here: a figure to read beside the table, not the same instances.
WITT_LWR_CITED: dict[str, tuple[float, int]] = {
    "chipseq": (198.3, 406), "eager": (425.0, 258), "iwd": (0.49, 123),
    "mag": (333.8, 1072), "methylseq": (4121.0, 95), "rnaseq": (185.9, 188),
}  # fmt: skip


class SizingError(ValueError):
    """A table the protocol cannot size: says what it needs."""


def goal(methods: dict[str, dict], method: str = "scoutless", resource: Resource = MEMORY) -> dict:
    """The best goal baseline by wastage, and ``method``'s ratio and whether it beats it
    on both wastage and failures."""
    key = f"wastage_{resource.unit}"
    cands = {k: methods[k] for k in GOAL_BASELINES[resource.name] if k in methods}
    best = min(cands, key=lambda k: cands[k][key])
    ours, ref = methods[method][key], cands[best][key]
    # a baseline that wastes nothing: met only by wasting nothing too
    ratio = ours / ref if ref > 0 else (1.0 if ours <= 0 else np.inf)
    return {
        "method": method, "best_baseline": best, f"baseline_{key}": ref,
        "baseline_failures": cands[best]["failures"], "ratio": ratio, "wastage_met": ours <= ref,
        "failures_met": methods[method]["failures"] <= cands[best]["failures"],
    }  # fmt: skip


def size_workflow(
    frame: pd.DataFrame,
    workflow: str,
    seed: int,
    *,
    settings: Settings,
    cold_histories: Sequence[pd.DataFrame] | None = None,
    resource: Resource = MEMORY,
    features: str = "submission",
) -> dict:
    """The baselines and scoutless (warm; and cold from ``cold_histories`` when given) on
    one workflow's instance table, with the goal of each scoutless row; ``resource`` sized
    with ``features`` (`sizing.instances.FEATURES`)."""
    types = task_types(frame, seed, workflow, resource, features)
    if not types:
        raise SizingError(
            f"{workflow}: nothing to size: no task type has {MIN_ROWS} instances with rss > 0 "
            f"and realtime > 0 ({len(frame)} rows, {frame['process'].nunique()} task types)"
        )
    sizers = [
        *baseline_sizers(settings, resource, requests=has_requests(types)),
        warm_sizer(types, settings.sizing, resource),
    ]
    if cold_histories is not None:
        sizers.append(cold_sizer(types, cold_histories, settings.sizing, resource, features))
    out = run_types(types, sizers, resource)
    out["goal"] = {s: goal(out["methods"], s, resource) for s in ("scoutless", "scoutless_cold")
                   if s in out["methods"]}  # fmt: skip
    out["resource"], out["features"] = resource.name, features
    if workflow in WITT_LWR_CITED and resource.name == "memory":
        gbh, fails = WITT_LWR_CITED[workflow]
        out["cited"] = {"witt_lwr": {"wastage_gbh": gbh, "failures": fails, "seed": 1996}}
    return out
