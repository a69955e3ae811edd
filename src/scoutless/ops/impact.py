"""The impact of skipping scouts, per rollout arm and window, from PanDA's own records.

Every figure is a ratio of sums over tasks (``num`` / ``den`` per task), so the figure of
an arm, its window's figure and each bootstrap resample over tasks are computed the same
way. Per task (docs/how-to/rollout.md has the table; a replayed canary computes the same
figures from its own accumulators, ``replay/canary.py``, and a test holds the two equal):

* ``first_prod_job_h``: task creation → the first production (non-scout) job's start;
* ``completion_h``: task creation → its last job's end (tasks that completed: done,
  finished, failed);
* ``first_attempt_success``: first attempts that finished ÷ first attempts;
* ``memory_kills`` / ``walltime_kills``: attempts failed with a memory / walltime pilot
  error code (``Settings.rollout``) ÷ jobs; ``retries_per_job``: attempts − jobs ÷ jobs;
* ``wasted_core_hours``: failed attempts' wall × cores, per task;
* ``memory_slack_gb_hours``: Σ (minramcount − maxPSS)⁺ × wall over every attempt, per
  task; ``memory_slack_rel``: Autopilot's Σ wall·(limit − used)⁺/limit ÷ Σ wall;
* ``walltime_slack_core_hours``: Σ cores × (maxwalltime − wall)⁺ over finished jobs, per
  task; ``walltime_slack_rel``: Σ wall·(limit − wall)⁺/limit ÷ Σ wall, finished jobs;
* ``memory_vs_scouts`` / ``cputime_vs_scouts`` / ``walltime_vs_scouts``: the prediction's
  value ÷ what the task ran with after scouting (jedi_tasks' ramcount, cputime,
  walltime): in the shadow and control arms, the would-have-been allocation against the
  scouts'.

Differences between two arms (canary − control) carry a percentile bootstrap interval
over tasks. No I/O here except :func:`impact_report`, which reads the collected tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd
from prometheus_client import CollectorRegistry, Gauge
from sqlalchemy import Engine

from scoutless.config import RolloutSettings
from scoutless.ops.figure_labels import FIGURE_LABELS
from scoutless.ops.impact_store import ImpactError, read_impact
from scoutless.ops.monitoring import window_start
from scoutless.ops.prediction_log import PredictionLog, of_the_task
from scoutless.replay.canary import IMPACT_FIGURES

__all__ = [
    "FIGURE_UNITS",
    "ImpactError",
    "ImpactReport",
    "arm_difference",
    "impact_report",
    "task_figures",
    "window_for",
]

FIGURES = IMPACT_FIGURES
#: task statuses whose tasks ran to their end (completion time); broken and exhausted
#: tasks stopped before their production jobs ran
COMPLETED_STATUSES = frozenset({"done", "finished", "failed"})
#: figures where more is better (the guard rail reads a drop of these as harm)
HIGHER_IS_BETTER = frozenset(f for f, label in FIGURE_LABELS.items() if label.better == "higher")
#: per figure, its unit and how the tasks are pooled (``FIGURE_LABELS`` has its name too)
FIGURE_UNITS: dict[str, tuple[str, str]] = {
    f: (label.unit, label.pooled) for f, label in FIGURE_LABELS.items()
}
#: the windows ``monitor impact`` picks from when not told (``window_for``)
WINDOWS: tuple[tuple[str, float], ...] = (
    ("1h", 1 / 24), ("3h", 1 / 8), ("6h", 0.25), ("12h", 0.5), ("1D", 1.0), ("2D", 2.0),
    ("7D", 7.0), ("14D", 14.0), ("30D", 30.0), ("91D", 91.0), ("365D", 365.0),
)  # fmt: skip
_EPOCH_END = pd.Timestamp("1970-01-02")  # PanDA's DEFAULT for a time never set is 1970-01-01
HOUR = 3600.0


def window_for(days: float, max_points: int = 40) -> str:
    """The smallest window of :data:`WINDOWS` that cuts ``days`` into at most ``max_points``
    windows (a page of 366 daily points per arm is unreadable)."""
    if days <= 0 or max_points < 1:
        raise ValueError(f"{days=} and {max_points=} must be positive")
    return next((name for name, d in WINDOWS if days / d <= max_points), WINDOWS[-1][0])


def _times(frame: pd.DataFrame, column: str) -> pd.Series:
    times = pd.to_datetime(frame[column])
    return times.where(times > _EPOCH_END)


def _job_parts(jobs: pd.DataFrame, s: RolloutSettings) -> pd.DataFrame:
    """Per job row, the pieces the per-task sums add up."""
    start, end = _times(jobs, "starttime"), _times(jobs, "endtime")
    wall = (end - start).dt.total_seconds().clip(lower=0).fillna(0.0)
    finished = jobs["jobstatus"].eq("finished")
    failed = ~finished
    first = jobs["attemptnr"].fillna(1).astype(int) <= 1
    cores = jobs["corecount"].fillna(1).clip(lower=1).astype(float)
    code = jobs["piloterrorcode"].fillna(0).astype(int)
    ram = jobs["minramcount"].astype(float).where(lambda v: v > 0)
    used = jobs["maxpss"].astype(float) / 1024.0
    mem_ok = ram.notna() & used.notna() & start.notna()
    spare_mb = (ram - used).clip(lower=0)
    wlimit = jobs["maxwalltime"].astype(float).where(lambda v: v > 0)
    wall_ok = finished & wlimit.notna() & start.notna()
    spare_s = (wlimit - wall).clip(lower=0)
    return pd.DataFrame({
        "jeditaskid": jobs["jeditaskid"].astype(np.int64),
        "first": first, "first_ok": first & finished, "rows": 1.0,
        "memory_kill": failed & code.isin(s.memory_kill_codes),
        "walltime_kill": failed & code.isin(s.walltime_kill_codes),
        "wasted": np.where(failed, wall * cores / HOUR, 0.0),
        "mem_slack_gbh": np.where(mem_ok, spare_mb / 1024.0 * wall / HOUR, 0.0),
        "mem_slack_w": np.where(mem_ok, wall * spare_mb / ram, 0.0),
        "mem_w": np.where(mem_ok, wall, 0.0),
        "wall_slack_ch": np.where(wall_ok, cores * spare_s / HOUR, 0.0),
        "wall_slack_w": np.where(wall_ok, wall * spare_s / wlimit, 0.0),
        "wall_w": np.where(wall_ok, wall, 0.0),
        "prod_start": start.where(~jobs["is_scout"].astype(bool)),
        "end": end,
    })  # fmt: skip


def task_figures(
    tasks: pd.DataFrame, jobs: pd.DataFrame, predicted: pd.DataFrame | None = None,
    *, settings: RolloutSettings,
) -> pd.DataFrame:  # fmt: skip
    """One row per task: ``<figure>_num`` and ``<figure>_den`` for every figure.

    ``predicted``: per task id, the logged ``memory`` and ``walltime`` values (optional)."""
    s = settings
    parts = _job_parts(jobs, s)
    g = parts.groupby("jeditaskid")
    sums = g[["first", "first_ok", "rows", "memory_kill", "walltime_kill", "wasted",
              "mem_slack_gbh", "mem_slack_w", "mem_w", "wall_slack_ch", "wall_slack_w",
              "wall_w"]].sum()  # fmt: skip
    t = tasks.set_index("jeditaskid")
    created = _times(t, "creationdate")
    first_prod = g["prod_start"].min().reindex(t.index)
    last_end = g["end"].max().reindex(t.index)
    sums = sums.reindex(t.index, fill_value=0.0)
    n = sums["first"]
    out = pd.DataFrame(index=t.index)

    def put(name: str, num: pd.Series | np.ndarray, den: pd.Series | np.ndarray) -> None:
        num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
        valid = np.isfinite(num) & np.isfinite(den) & (den > 0)
        out[f"{name}_num"], out[f"{name}_den"] = (
            np.where(valid, num, 0.0),
            np.where(valid, den, 0.0),
        )

    to_prod = (first_prod - created).dt.total_seconds() / HOUR
    put("first_prod_job_h", to_prod, to_prod.notna())
    done = (last_end - created).dt.total_seconds() / HOUR
    completed = t["final"].astype(bool) & t["status"].astype(str).str.lower().isin(
        COMPLETED_STATUSES
    )
    put("completion_h", done, completed & done.notna())
    put("first_attempt_success", sums["first_ok"], n)
    put("memory_kills", sums["memory_kill"], n)
    put("walltime_kills", sums["walltime_kill"], n)
    put("retries_per_job", sums["rows"] - n, n)
    has_jobs = n > 0
    put("wasted_core_hours", sums["wasted"], has_jobs)
    put("memory_slack_gb_hours", sums["mem_slack_gbh"], has_jobs)
    put("memory_slack_rel", sums["mem_slack_w"], sums["mem_w"])
    put("walltime_slack_core_hours", sums["wall_slack_ch"], has_jobs)
    put("walltime_slack_rel", sums["wall_slack_w"], sums["wall_w"])
    pred = (predicted if predicted is not None else pd.DataFrame()).reindex(t.index)
    for target, scouts in (("memory", t["ramcount"]), ("cputime", _cputime(t)),
                           ("walltime", t["walltime"])):  # fmt: skip
        value = pred[target] if target in pred else pd.Series(np.nan, index=t.index)
        put(f"{target}_vs_scouts", value, scouts.astype(float))
    return out


def _cputime(tasks: pd.DataFrame) -> pd.Series:
    """jedi_tasks' cputime in HS06·s/event (``cputimeunit`` mHS06sPerEvent: thousandths)."""
    if "cputime" not in tasks:
        return pd.Series(np.nan, index=tasks.index)
    unit = tasks.get("cputimeunit", pd.Series("", index=tasks.index)).fillna("").astype(str)
    scale = np.where(unit.str.startswith("m"), 1e-3, 1.0)
    return tasks["cputime"].astype(float) * scale


def figure_values(figures: pd.DataFrame) -> dict[str, float]:
    """Ratio of sums per figure (NaN where no task counts)."""
    out = {}
    for name in FIGURES:
        den = figures[f"{name}_den"].sum()
        out[name] = float(figures[f"{name}_num"].sum() / den) if den > 0 else float("nan")
    return out


@dataclass(frozen=True)
class Difference:
    figure: str
    arm: str
    baseline: str
    value: float  # arm − baseline
    lo: float
    hi: float
    n_arm: int
    n_baseline: int

    def describe(self) -> str:
        return (f"{self.figure}: {self.arm} − {self.baseline} = {self.value:+.4f} "
                f"[{self.lo:+.4f}, {self.hi:+.4f}] over {self.n_arm}/{self.n_baseline} tasks")  # fmt: skip


def _resampled(figures: pd.DataFrame, draws: np.ndarray) -> dict[str, np.ndarray]:
    """Each figure on each resample (rows of ``draws`` index tasks)."""
    out = {}
    for name in FIGURES:
        num = figures[f"{name}_num"].to_numpy()[draws].sum(axis=1)
        den = figures[f"{name}_den"].to_numpy()[draws].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    return out


def arm_difference(
    a: pd.DataFrame, b: pd.DataFrame, names: tuple[str, str], *, n_boot: int, level: float,
    seed: int = 0,
) -> list[Difference]:  # fmt: skip
    """Per figure, (figure of ``a``) − (figure of ``b``) with a percentile bootstrap
    interval over tasks (each arm resampled on its own)."""
    if a.empty or b.empty:
        return []
    rng = np.random.default_rng(seed)
    boot_a = _resampled(a, rng.integers(0, len(a), (n_boot, len(a))))
    boot_b = _resampled(b, rng.integers(0, len(b), (n_boot, len(b))))
    va, vb = figure_values(a), figure_values(b)
    q = ((1 - level) / 2 * 100, (1 + level) / 2 * 100)
    out = []
    for name in FIGURES:
        diff = boot_a[name] - boot_b[name]
        diff = diff[np.isfinite(diff)]
        lo, hi = np.percentile(diff, q) if len(diff) else (np.nan, np.nan)
        n_a, n_b = int((a[f"{name}_den"] > 0).sum()), int((b[f"{name}_den"] > 0).sum())
        out.append(Difference(name, names[0], names[1], va[name] - vb[name], float(lo),
                              float(hi), n_a, n_b))  # fmt: skip
    return out


@dataclass
class ImpactReport:
    """Figures per arm (all windows) and per arm and window, and the arms' differences."""

    per_arm: pd.DataFrame  # arm, figure, value, n_tasks
    per_window: pd.DataFrame  # window_start, arm, figure, value, n_tasks
    differences: list[Difference] = field(default_factory=list)
    n_tasks: int = 0

    def difference(self, figure: str) -> Difference | None:
        return next((d for d in self.differences if d.figure == figure), None)


def _long(figures: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    rows = []
    for key, group in figures.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        for name, value in figure_values(group).items():
            n = int((group[f"{name}_den"] > 0).sum())
            rows.append({**dict(zip(keys, key, strict=True)), "figure": name, "value": value,
                         "n_tasks": n})  # fmt: skip
    return pd.DataFrame(rows, columns=[*keys, "figure", "value", "n_tasks"])


def build_report(
    figures: pd.DataFrame, arms: pd.DataFrame, every: str, settings: RolloutSettings,
    compare: tuple[str, str] = ("canary", "control"),
) -> ImpactReport:  # fmt: skip
    """``arms``: per task id, ``arm`` and ``created_at`` (its prediction's time)."""
    s = settings
    frame = figures.join(arms[["arm", "created_at"]], how="inner")
    frame["arm"] = frame["arm"].fillna("unrecorded")
    frame["window_start"] = window_start(frame["created_at"], every)
    a, b = (frame[frame["arm"] == name] for name in compare)
    diffs = arm_difference(a, b, compare, n_boot=s.bootstrap, level=s.confidence, seed=s.seed)
    return ImpactReport(_long(frame, ["arm"]), _long(frame, ["window_start", "arm"]), diffs,
                        len(frame))  # fmt: skip


def logged_arms(
    log_engine: Engine, since: datetime | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per task, its latest logged prediction's arm and time, and its memory and walltime
    values (for the would-have-been allocation)."""
    log = of_the_task(PredictionLog(log_engine).read(since=since))
    log = log.dropna(subset=["jeditaskid"])
    if log.empty:
        empty = pd.DataFrame(columns=["arm", "created_at"])
        return empty, pd.DataFrame(columns=["memory", "cputime", "walltime"])
    log["jeditaskid"] = log["jeditaskid"].astype(np.int64)
    latest = log.sort_values(["created_at", "id"]).drop_duplicates(
        ["jeditaskid", "target"], keep="last"
    )
    arms = latest.drop_duplicates("jeditaskid", keep="last").set_index("jeditaskid")
    values = latest.pivot(index="jeditaskid", columns="target", values="recommended_value")
    targets = ["memory", "cputime", "walltime"]
    return arms[["arm", "created_at"]], values.reindex(columns=targets).astype(float)


def impact_report(
    log_engine: Engine, *, settings: RolloutSettings, every: str = "1D",
    since: datetime | None = None,
) -> ImpactReport:  # fmt: skip
    """The report from the collected tables (``collect_impact`` first)."""
    tasks, jobs = read_impact(log_engine)
    if tasks.empty:
        raise ImpactError("no collected tasks yet: no task of the prediction log is in the history"
                          " (`monitor impact` collects them, unless --no-collect)")
    arms, values = logged_arms(log_engine, since)
    figures = task_figures(tasks, jobs, values, settings=settings)
    return build_report(figures, arms, every, settings)


class ImpactGauges:
    """Prometheus gauges: each arm's figures and the canary − control difference."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.figure = Gauge("scoutless_impact_figure", "impact figure per rollout arm",
                            ["figure", "arm"], registry=self.registry)  # fmt: skip
        self.difference = Gauge(
            "scoutless_impact_difference", "canary − control, with bootstrap bounds",
            ["figure", "bound"], registry=self.registry,
        )  # fmt: skip
        self.tasks = Gauge("scoutless_impact_tasks", "tasks per arm with the figure",
                           ["figure", "arm"], registry=self.registry)  # fmt: skip

    def update(self, report: ImpactReport) -> None:
        for row in report.per_arm.itertuples(index=False):
            self.figure.labels(row.figure, row.arm).set(row.value)
            self.tasks.labels(row.figure, row.arm).set(row.n_tasks)
        for d in report.differences:
            for bound, value in (("value", d.value), ("lo", d.lo), ("hi", d.hi)):
                self.difference.labels(d.figure, bound).set(value)
