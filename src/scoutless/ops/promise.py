"""The promise kept in production: realised under-allocation against the α each prediction
was made at, per target, group and window; an alert when it drifts above α beyond its
binomial spread; and a calibration refitted on recent tasks so the bound holds again.

A logged prediction under-allocates when the task's actual value (``ops.actuals``, the
training's target code) exceeds the value it was given (``recommended_value``). Over a
window's ``n`` predictions made at α, the count of under-allocations is at most
Binomial(n, α) if the promise holds; a rate above ``α + z·sqrt(α(1 − α)/n)``
(``Settings.rollout.promise_z``) is a breach. Groups are ``all`` and each value of
``gshare`` and ``processingtype`` as the task was logged.

The refit is split-conformal per (target, group) on the multiplicative score
``actual ÷ given`` of the tasks with actuals in a rolling window: the
``ceil((n + 1)(1 − α))``-th smallest score is a factor that, applied to the values given
to exchangeable later tasks of the group, under-allocates with probability at most α.
It is registered in the registry beside the model versions (``REG/calibrations/<id>.json``,
``REG/calibration`` naming the one in force, a ``calibrate`` record in ``registry.json``'s
history) and applied by the listener to the values it sends (:func:`apply_factors`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoutless.atomic import atomic_write_text
from scoutless.config import RolloutSettings
from scoutless.ops.actuals import join_predictions
from scoutless.ops.alerts import Alert
from scoutless.ops.monitoring import logged_features, window_start
from scoutless.ops.registry import new_version_id, record_event

GROUP_KEYS = ("gshare", "processingtype")
PROMISE_COLUMNS = ["window_start", "target", "group", "n", "under", "rate", "alpha", "bound",
                   "breached"]  # fmt: skip
CALIBRATIONS_DIR = "calibrations"
CALIBRATION_FILE = "calibration"
RULE = "promise-kept"


def judged(predictions: pd.DataFrame, actuals: pd.DataFrame) -> pd.DataFrame:
    """Latest prediction per (task, target) with its actual, alpha, groups and whether it
    under-allocated; predictions made without a recorded alpha are left out."""
    joined = join_predictions(predictions, actuals)
    joined = joined[joined["alpha"].notna()] if "alpha" in joined else joined.iloc[:0]
    if joined.empty:
        return joined.assign(under=False, **dict.fromkeys(GROUP_KEYS, None))
    features = logged_features(predictions)
    ids = predictions.dropna(subset=["features"]).drop_duplicates(
        subset=["request_id", "jeditaskid", "features"]
    )["jeditaskid"]  # the rows logged_features decoded, in its order
    groups = features.reindex(columns=list(GROUP_KEYS)).assign(jeditaskid=ids.to_numpy())
    groups = groups.drop_duplicates("jeditaskid", keep="last").astype({"jeditaskid": np.int64})
    out = joined.merge(groups, on="jeditaskid", how="left")
    out["under"] = out["actual_value"].astype(float) > out["recommended_value"].astype(float)
    return out


def _rows(frame: pd.DataFrame, group: str, z: float, min_n: int) -> list[dict[str, Any]]:
    rows = []
    for (start, target), g in frame.groupby(["window_start", "target"], sort=True):
        n, under = len(g), int(g["under"].sum())
        alpha = float(g["alpha"].astype(float).mean())
        bound = alpha + z * math.sqrt(alpha * (1 - alpha) / n)
        rows.append({"window_start": start, "target": target, "group": group, "n": n,
                     "under": under, "rate": under / n, "alpha": alpha, "bound": bound,
                     "breached": n >= min_n and under / n > bound})  # fmt: skip
    return rows


def promise_by_window(
    judged_rows: pd.DataFrame, every: str, settings: RolloutSettings
) -> pd.DataFrame:
    """Per window, target and group: n, under-allocations, their rate, α, the bound, breach."""
    s = settings
    if judged_rows.empty:
        return pd.DataFrame(columns=PROMISE_COLUMNS)
    frame = judged_rows.assign(window_start=window_start(judged_rows["created_at"], every))
    rows = _rows(frame, "all", s.promise_z, s.promise_min_tasks)
    for key in GROUP_KEYS:
        for value, g in frame.groupby(frame[key].astype(str), sort=True):
            rows += _rows(g, f"{key}={value}", s.promise_z, s.promise_min_tasks)
    return pd.DataFrame(rows, columns=PROMISE_COLUMNS)


def promise_alerts(table: pd.DataFrame) -> list[Alert]:
    """One alert per breaching (window, target, group); ``fire`` stores each once."""
    out = []
    for row in table[table["breached"].astype(bool)].itertuples(index=False):
        out.append(Alert(RULE, "under_rate", f"{row.target}:{row.group}", float(row.rate),
                         float(row.bound), ">", 1, pd.Timestamp(row.window_start).to_pydatetime(),
                         "warning", False))  # fmt: skip
    return out


# -- the refit ----------------------------------------------------------------------------
def conformal_factor(scores: np.ndarray, alpha: float) -> float:
    """The ceil((n + 1)(1 − α))-th smallest score (inf when n is too small for α)."""
    scores = np.sort(np.asarray(scores, dtype=float))
    k = math.ceil((len(scores) + 1) * (1 - alpha))
    return float(scores[k - 1]) if 0 < k <= len(scores) else math.inf


@dataclass
class Recalibration:
    """Per target, group -> factor on the value given (1: keep), fitted at α."""

    factors: dict[str, dict[str, float]]
    alpha: float
    n_tasks: int
    since: str
    version: str = field(default_factory=new_version_id)
    fitted_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def factor(self, target: str, task: Mapping[str, Any]) -> float:
        """The factor of the most specific group fitted for the task (processing type, then
        gshare, then all; 1 when none was): a drifted group gets its own correction, and
        the others are not charged for it."""
        per = self.factors.get(target, {})
        keys = [*(f"{k}={task.get(k)}" for k in reversed(GROUP_KEYS)), "all"]
        return next((per[k] for k in keys if k in per), 1.0)


def refit(judged_rows: pd.DataFrame, since: datetime, alpha: float, min_n: int) -> Recalibration:
    """Factors per (target, group) with at least ``min_n`` tasks since ``since``; never
    below 1 (the refit restores the bound; it does not trade it for slack)."""
    recent = judged_rows[pd.to_datetime(judged_rows["created_at"]) >= pd.Timestamp(since)]
    score = recent["actual_value"].astype(float) / recent["recommended_value"].astype(float)
    recent = recent.assign(score=score.replace([np.inf, -np.inf], np.nan)).dropna(subset=["score"])
    factors: dict[str, dict[str, float]] = {}
    for target, g in recent.groupby("target"):
        per = {"all": g["score"].to_numpy()}
        for key in GROUP_KEYS:
            per |= {
                f"{key}={v}": part["score"].to_numpy() for v, part in g.groupby(g[key].astype(str))
            }
        factors[str(target)] = {
            name: max(1.0, conformal_factor(s, alpha)) for name, s in per.items() if len(s) >= min_n
        }
    return Recalibration(factors, alpha, int(recent["jeditaskid"].nunique()), str(since))


def register_calibration(registry: str | Path, recal: Recalibration) -> Path:
    """Write it as a registry entry and make it the one in force (atomic pointer)."""
    reg = Path(registry)
    folder = reg / CALIBRATIONS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{recal.version}.json"
    atomic_write_text(path, json.dumps(asdict(recal), indent=1, sort_keys=True))
    atomic_write_text(reg / CALIBRATION_FILE, recal.version + "\n")
    record_event(reg, {"time": recal.fitted_at, "action": "calibrate", "version": recal.version,
                          "alpha": recal.alpha, "n_tasks": recal.n_tasks, "since": recal.since})  # fmt: skip
    return path


def current_calibration(registry: str | Path) -> Recalibration | None:
    """The calibration in force in a registry (None: none registered)."""
    reg = Path(registry)
    pointer = reg / CALIBRATION_FILE
    if not pointer.is_file():
        return None
    data = json.loads((reg / CALIBRATIONS_DIR / f"{pointer.read_text().strip()}.json").read_text())
    return Recalibration(**data)


def apply_factors(targets: dict[str, dict[str, Any]], recal: Recalibration | None,
                  task: Mapping[str, Any]) -> dict[str, dict[str, Any]]:  # fmt: skip
    """A task's targets (the service's answer) with each value scaled by its factor."""
    if recal is None:
        return targets
    out = {}
    for name, entry in targets.items():
        factor = recal.factor(name, task)
        out[name] = entry if factor == 1.0 else {
            **entry, "recommended_value": float(entry["recommended_value"]) * factor,
            "calibration": recal.version,
        }  # fmt: skip
    return out
