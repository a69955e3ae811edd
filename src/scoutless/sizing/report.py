"""One workflow sized under the peers' protocol, in the shape `scoutless size` writes and
`benchmarks/sizing.py` collects: the methods' cells, per task type, and the goal — the
best of the published baselines (Witt-LR std-under counted without its look-ahead) and
scoutless's wastage and failures against it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from scoutless.config import Settings
from scoutless.sizing.baselines import ErrorList
from scoutless.sizing.live import run_live
from scoutless.sizing.lwr import offline_workflow
from scoutless.sizing.protocol import (
    MIN_ROWS,
    PeerSizer,
    Tally,
    TaskType,
    eligible_types,
    task_types,
)
from scoutless.sizing.resources import MEMORY, Resource
from scoutless.sizing.run import (
    GOAL_BASELINES,
    baseline_sizers,
    cold_sizer,
    has_requests,
    run_types,
    users_presets,
    warm_sizer,
)  # fmt: skip

#: Witt et al.'s low-wastage regression as Sizey's own code reports it (offline, its own
#: 30 % sample as history, ``peak_rss`` as the need; seed 1996): GB·h, failures; what
#: `lwr.offline` reproduces (the online row, ``witt_lwr``, sizes the protocol's instances).
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
    offline_lwr: bool = False,
    protocol: str = "peers",
    on_type: Callable[[int, int, str], None] | None = None,
) -> dict:
    """The baselines and scoutless (warm; and cold from ``cold_histories`` when given) on
    one workflow's instance table, with the goal of each scoutless row; ``resource`` sized
    with ``features`` (`sizing.instances.FEATURES`); ``offline_lwr``: also Witt's
    low-wastage regression as published (its own split, ``peak_rss``, the peers' ``rchar``);
    ``protocol``: ``peers`` (one type after another) or ``live`` (`live.py`); ``on_type``:
    called before each type the peers' protocol walks (a progress bar)."""
    types = task_types(frame, seed, workflow, resource, features)
    if not types:
        raise SizingError(
            f"{workflow}: nothing to size: no task type has {MIN_ROWS} instances with rss > 0 "
            f"and realtime > 0 ({len(frame)} rows, {frame['process'].nunique()} task types)"
        )
    ours = [warm_sizer(types, settings.sizing, resource)]
    if cold_histories is not None:
        ours.append(cold_sizer(types, cold_histories, settings.sizing, resource, features))
    out = _walk(types, ours, protocol, settings, resource, on_type)
    out["goal"] = {s: goal(out["methods"], s, resource) for s in ("scoutless", "scoutless_cold")
                   if s in out["methods"]}  # fmt: skip
    out["resource"], out["features"] = resource.name, features
    if workflow in WITT_LWR_CITED and resource.name == "memory":
        gbh, fails = WITT_LWR_CITED[workflow]
        out["cited"] = {"witt_lwr": {"wastage_gbh": gbh, "failures": fails, "seed": 1996}}
    if offline_lwr and resource.name == "memory":
        published = eligible_types(frame, MEMORY, "peers-rchar")
        out["offline"] = {"witt_lwr": offline_workflow(published, seed)}
    return out


def _walk(
    types: list[TaskType], ours: list[PeerSizer], protocol: str, settings: Settings,
    resource: Resource, on_type: Callable[[int, int, str], None] | None = None,
) -> dict[str, dict]:  # fmt: skip
    """Every baseline and ``ours`` on ``types`` under ``protocol`` (``on_type``: the peers'
    walk's progress, before each type)."""
    requests = has_requests(types)
    if protocol == "live":
        lists = (ErrorList(), ErrorList(), ErrorList())
        out = run_live(
            types, lambda: baseline_sizers(settings, resource, requests=requests, lists=lists),
            ours, resource=resource,
        )  # fmt: skip
        return with_presets(types, out, resource) if requests else out
    if protocol == "peers":
        sizers = [*baseline_sizers(settings, resource, requests=requests), *ours]
        return run_types(types, sizers, resource, on_type=on_type)
    raise SizingError(f"unknown protocol {protocol!r}; expected peers or live")


def with_presets(
    types: Sequence[TaskType], out: dict[str, dict], resource: Resource = MEMORY
) -> dict[str, dict]:
    """``out`` with the users' presets' row (per type and in all), as `run_types` books it."""
    total = Tally()
    for task in types:
        cell = users_presets(task, resource)
        total.add(cell)
        out["task_types"][task.name]["methods"]["users_presets"] = cell.summary(resource)
    out["methods"]["users_presets"] = total.summary(resource)
    return out


def median_interval(
    values: Sequence[float], *, level: float = 0.95, draws: int = 10_000, seed: int = 0
) -> dict[str, float]:
    """The median of ``values`` (e.g. one ratio per workflow-seed cell) and its percentile
    bootstrap interval: the cells resampled with replacement ``draws`` times."""
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    medians = np.median(v[rng.integers(0, len(v), size=(draws, len(v)))], axis=1)
    lo, hi = np.percentile(medians, [50 * (1 - level), 50 * (1 + level)])
    return {"median": float(np.median(v)), "low": float(lo), "high": float(hi), "level": level}
