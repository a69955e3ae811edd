"""The replay on imported traces (``scoutless import``): the user's request is the incumbent.

Batch traces (SWF, sacct, condor) have no scouts: a job runs with what its user asked for.
Each row of an imported table is one job with its measured needs (run time → walltime,
used memory per core → memory, per job: × its ``cores``) and its request (``{t}_request``).
Strategies:

- **request**: the user's requested memory per core and walltime (PanDA's defaults where
  the trace has none);
- **predicted**: the bundle's allocation under the replay's policy (``cost`` by default:
  the least expected cost; ``value``; or a class policy's recommended value);
- **selective**: per job and target, the user's request wherever its expected cost under
  the model's distribution is lower than the cost-aware value's and its calibrated kill
  probability within the cap, the cost-aware value elsewhere (a trace has no scouts: the
  request is the alternative to a prediction);
- **online**: the online sizer (``scoutless.sizing.online``, the one ``scoutless size`` and
  the sizing benchmark run) sizes each job's memory per core when it is released, in submission
  order, per task type (``replay.trace_type_columns``: SWF's executable and user by
  default); the table's training rows are each type's history; every outcome is learnt as
  the job ends on the replay's clock (a memory kill as a censored lower bound: kill factor ×
  allocation), and a kill's retry is the sizer's choice on the need's distribution above
  that bound (PanDA's ladder only where the sizer has nothing). A first attempt never
  asks more than the incumbent (the user's request, else PanDA's default) while that has
  held for every outcome of its type (no need above it, no kill at it): what the user
  knows of the job bounds what a thin or borrowed history's tail would add; a type whose
  request once fell short is sized by the online sizer alone. Memory only: its walltime
  is the user's request, as for ``request``;
- **oracle**: the job's own measured memory and walltime: perfect foresight.

The model's strategies decide under the rules the history's replay decides under
(``replay.site_rules.decision_rules``: the grace the site guarantees, not the pilot's
observed kill factor) and a kill cap per target (:func:`trace_caps`: at most the users'
requests' own kill share in the table's training rows), kept on the calibrated
distribution where the cost grid cannot resolve it.

A trace's walltime is priced as the cost model prices cpuTime, with one event per core,
unit corePower, 100 % efficiency and no baseWalltime, so that getJobMaxWalltime of the
"cpuTime" is the walltime itself. A trace task is one job, so the hybrid's re-tuning from a
task's first jobs has nothing to act on and is not run; retries follow the same PanDA
rules (memory ladder, walltime to the queue maximum). Only the table's test rows are
replayed: the bundle never trained on them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from scoutless.allocation.allocate import value_allocation
from scoutless.allocation.context import JobContext
from scoutless.allocation.costs import memory_kill_in_gb_hours, memory_overuse_in_slack
from scoutless.config import Settings
from scoutless.policy_names import VALUE_POLICIES
from scoutless.replay.plan import StrategyPlan
from scoutless.replay.pool import standard_types
from scoutless.replay.site_rules import decision_rules
from scoutless.replay.submission import class_values
from scoutless.replay.trace_decision import (
    PRICED_AS,
    kill_cap,
    kill_probability,
    numeric_column,
    trace_caps,
    trace_decision,
)
from scoutless.replay.workload import JobFrame, Workload, WorkloadError
from scoutless.sizing.distribution import FailurePrice
from scoutless.sizing.features import Release
from scoutless.sizing.online import OnlineSizer
from scoutless.sizing.protocol import Outcome
from scoutless.sources.assemble import request_col
from scoutless.targets.spec import value_col

if TYPE_CHECKING:
    from scoutless.bundle import Predictor
    from scoutless.history.table import TrainingTable

TRACE_STRATEGIES: tuple[str, ...] = ("request", "predicted", "selective", "online", "oracle")
#: bytes in the replay's MB (the trace's KB are 1,024 bytes)
MB = 1024.0 * 1024.0


def trace_rows(table: TrainingTable) -> pd.DataFrame:
    """The table's test rows that ran (positive walltime), in submission order."""
    _, test = table.split(table.default_split)
    wall = numeric_column(test, value_col("walltime"))
    rows = test[wall > 0]
    if rows.empty:
        raise WorkloadError("the trace's test rows have no job with a positive walltime")
    if "creationdate" in rows.columns:
        rows = rows.sort_values("creationdate", kind="stable")
    return rows.reset_index(drop=True)


def trace_history(table: TrainingTable) -> pd.DataFrame:
    """The table's training rows: what the online strategy knows before the replay."""
    train, _ = table.split(table.default_split)
    return train


def trace_cores(rows: pd.DataFrame) -> np.ndarray:
    """Each row's cores: the table's ``cores`` (what its memory per core is per), else the
    requested processors; 1 where neither is known."""
    cores = numeric_column(rows, "cores" if "cores" in rows.columns else "requested_processors")
    return np.where(np.isnan(cores) | (cores < 1), 1.0, np.ceil(cores))


def trace_workload(rows: pd.DataFrame, settings: Settings) -> Workload:
    """One task of one unit per trace row; its need in MB per job (the table's MB per core
    × its cores)."""
    n = len(rows)
    cores = trace_cores(rows)
    wall = numeric_column(rows, value_col("walltime"))
    need = np.nan_to_num(numeric_column(rows, value_col("memory")), nan=0.0) * cores
    created = pd.to_datetime(rows.get("creationdate"), errors="coerce", utc=True)
    submit = np.zeros(n)
    if created is not None and created.notna().any():
        submit = np.nan_to_num((created - created.min()).dt.total_seconds().to_numpy(float))
    index = np.arange(n, dtype=np.int64)
    nan, zeros = np.full(n, np.nan), np.zeros(n)
    frame = JobFrame(
        task_id=index, cores=cores, wall_s=wall, maxpss_kb=need * 1024.0, nevents=nan,
        io_kb=zeros, core_power=np.ones(n), base_ram_mb=zeros, base_walltime_s=zeros,
        cpu_efficiency=np.full(n, 100.0),
    )  # fmt: skip
    kind = rows["queue"] if "queue" in rows.columns else pd.Series("trace", index=rows.index)
    return Workload(
        task_ids=numeric_column(rows, "jeditaskid").astype(np.int64),
        submit_s=submit, first_unit=index, n_units=np.ones(n, np.int64),
        n_scouts=np.zeros(n, np.int64), request_ram=numeric_column(rows, request_col("memory")),
        request_cputime=nan, base_ram_mb=zeros, base_walltime_s=zeros,
        cpu_efficiency=np.full(n, 100.0),
        kind=kind.fillna("unknown").astype(str).to_numpy(dtype=object),
        task=index, is_scout=np.zeros(n, bool), cores=cores, wall_s=wall, need_mb=need,
        nevents=nan, core_power=np.ones(n), frame=frame,
    )  # fmt: skip


def trace_job(work: Workload, wall_s: np.ndarray) -> JobContext:
    """Per trace job: its cores and expected walltime; events, power and efficiency set so
    that getJobMaxWalltime(x) = x (the walltime is allocated as it is asked for)."""
    n = work.n_tasks
    wall = np.where(np.isfinite(wall_s) & (wall_s > 0), wall_s, 3600.0)
    return JobContext(
        cores=work.cores.copy(), wall_s=wall, nevents=work.cores.copy(), core_power=np.ones(n),
        cpu_efficiency=np.full(n, 100.0), base_walltime_s=np.zeros(n), n_jobs=np.ones(n),
    )  # fmt: skip


def trace_values(
    rows: pd.DataFrame, work: Workload, settings: Settings, predictor: Predictor,
    *, policy: str, alpha: float, caps: dict[str, float],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:  # fmt: skip
    """Per target (memory, walltime): the predicted allocation (the policy's) and the
    selective one (the request where it costs less than the cost-aware value and its own
    calibrated kill probability is within the cap, or no more than the value's where the
    calibration cannot resolve the cap; else that value, whatever the policy); ``caps``:
    per target the kill cap (:func:`trace_caps`)."""
    features = rows[[f.name for f in predictor.feature_specs]]
    targets = [t for t in PRICED_AS if t in predictor.targets]
    predicted: dict[str, np.ndarray] = {}
    if policy not in VALUE_POLICIES:
        predicted = class_values(predictor, features, targets, policy=policy, alpha=alpha)
    if policy not in VALUE_POLICIES:  # a class policy: selective prices what has values
        targets = [t for t in targets if predictor.has_values(t)]
    dists = {t: predictor.value_distribution(features, t) for t in targets}
    levels = {t: predictor.value_levels(t) for t in targets}
    wall = dists["walltime"].median() if "walltime" in dists else np.full(len(rows), np.nan)
    job = trace_job(work, wall)
    rules = decision_rules(work, settings)
    chosen = {}
    for target in targets:
        request = numeric_column(rows, request_col(target))
        best, cost, request_cost = trace_decision(target, dists[target], levels[target],
                                                  request, job, settings, rules, caps[target])  # fmt: skip
        if policy == "value":
            predicted[target] = value_allocation(dists[target], levels[target], alpha).value
        elif policy == "cost":
            predicted[target] = best
        grace = settings.allocation.guaranteed_memory_grace if target == "memory" else 1.0
        risk = [kill_probability(dists[target], levels[target], a * grace) for a in (request, best)]
        allowed = risk[0] <= np.maximum(caps[target], risk[1])  # as safe as the cap, or the value
        chosen[target] = np.where((request_cost < cost) & allowed, request, best)
    return predicted, {**predicted, **chosen}


def trace_plans(
    rows: pd.DataFrame,
    settings: Settings,
    predictor: Predictor | None,
    *,
    policy: str = "cost",
    alpha: float = 0.05,
    work: Workload | None = None,
    history: pd.DataFrame | None = None,
) -> tuple[list[StrategyPlan], dict[str, Any]]:
    """The request incumbent, the oracle, online (the online sizer; ``history``: the rows
    it starts from) and, with a bundle, predicted and selective; and how often selective
    kept the request, per target."""
    cfg = settings.replay
    nan = np.full(len(rows), np.nan)
    ram = numeric_column(rows, request_col("memory"))
    ram = np.where(np.isnan(ram) | (ram <= 0), cfg.default_ram_mb_per_core, ram)
    request_wall = numeric_column(rows, request_col("walltime"))
    plans = [StrategyPlan("request", ram, nan, False, False, walltime=request_wall)]
    caps = trace_caps(history, settings)
    notes: dict[str, Any] = {"kill_caps": caps}
    if predictor is not None:
        work = work if work is not None else trace_workload(rows, settings)
        predicted, chosen = trace_values(rows, work, settings, predictor, policy=policy,
                                         alpha=alpha, caps=caps)  # fmt: skip
        for name, values in (("predicted", predicted), ("selective", chosen)):
            memory = values.get("memory", ram)
            memory = np.where(np.isfinite(memory) & (memory > 0), memory, ram)
            plans.append(StrategyPlan(name, memory, nan, False, False,
                                      walltime=values.get("walltime")))  # fmt: skip
        notes["request_kept"] = {
            t: float(np.mean(chosen[t] == numeric_column(rows, request_col(t)))) for t in chosen
        }
    work = work if work is not None else trace_workload(rows, settings)
    plans.append(StrategyPlan("online", ram, nan, False, False, walltime=request_wall,
                              sizer=OnlineMemory(rows, work, settings, history,
                                                 cap=caps["memory"])))  # fmt: skip
    oracle_ram = numeric_column(rows, value_col("memory"))
    oracle_ram = np.where(np.isfinite(oracle_ram) & (oracle_ram > 0), oracle_ram, ram)
    plans.append(StrategyPlan("oracle", oracle_ram, nan, False, False,
                              walltime=numeric_column(rows, value_col("walltime"))))  # fmt: skip
    return plans, notes


def type_keys(rows: pd.DataFrame, columns: list[str]) -> list[Hashable]:
    """Each row's task type: its values of ``columns`` that the table has (one type when
    it has none of them)."""
    present = [c for c in columns if c in rows.columns]
    if not present:
        return ["trace"] * len(rows)
    values = rows[present].astype("string").fillna("").to_numpy(dtype=object)
    return [tuple(v) for v in values]


def kill_price(settings: Settings, unit: float = 1.0) -> Callable[[Release], FailurePrice]:
    """A memory kill in the replay's terms, for the online sizer sizing memory per core
    (the replay's online strategy and the job follower alike): each of the job's cores for
    its run and the retry's overhead ((1 + ``kill_overhead``) core-hours per core-hour), in
    bytes per core of memory slack at ``memory_gb_hour`` (what an allocation that fits
    costs the sizer, per core: both sides scale with the cores), × the allocation's
    ``memory_kill_share`` (the run taken whole is an upper bound: the kill lands at the
    limit's share of it, and a need within the pilot's grace runs on at the overuse price);
    the allocation itself is not charged (holds 0): the cores are the loss. ``unit``: bytes
    in the sizer's unit of memory (``MB``: a ramCount's MB per core)."""
    by_width = {multicore: settings.allocation.prices_for(name)
                for multicore, name in standard_types(settings.replay.resource_types).items()}  # fmt: skip
    gb = 1024.0 * MB / unit * settings.allocation.memory_kill_share
    grace = settings.replay.memory_kill_factor if settings.allocation.memory_kill_grace else 1.0

    def price(f: Release) -> FailurePrice:
        prices = by_width.get(f.cores > 1) or settings.allocation.prices
        overuse = memory_overuse_in_slack(prices) if grace > 1.0 else 0.0
        return FailurePrice(fixed=memory_kill_in_gb_hours(prices) * gb, holds=0.0,
                            grace=grace, overuse=overuse)  # fmt: skip

    return price


class OnlineMemory:
    """The ``online`` strategy's :class:`~scoutless.replay.plan.UnitSizer`: one trace job
    a unit, its memory sized by the online sizer in bytes per core — the table's unit
    (a type's jobs may run on 1 or 64 cores: their totals are not one distribution) —
    the replay's per-job MB divided by the job's cores on the way in."""

    def __init__(self, rows: pd.DataFrame, work: Workload, settings: Settings,
                 history: pd.DataFrame | None = None, *, cap: float | None = None) -> None:  # fmt: skip
        """``cap``: each attempt's kill probability at most this (default the settings')."""
        columns = settings.replay.trace_type_columns
        cap = kill_cap("memory", settings) if cap is None else cap
        self.sizer = OnlineSizer(settings.sizing, failure_price=kill_price(settings),
                                 max_kill_probability=cap)  # fmt: skip
        #: an allocation of need ÷ grace survives where the site guarantees a grace
        self.grace = settings.allocation.guaranteed_memory_grace
        self.keys = type_keys(rows, columns)
        self.cores = work.cores.astype(float).tolist()
        request = numeric_column(rows, request_col("memory")) * MB
        self.default_mb = settings.replay.default_ram_mb_per_core
        #: MB per core the incumbent gives each job: its request, else the site's default
        self.incumbent = self._incumbent(request)
        self.features = [Release(cores=c, request=r) for c, r in zip(self.cores, request.tolist(),
                                                                     strict=True)]  # fmt: skip
        self.counts = {"sized": 0, "unsized": 0, "retries": 0, "learnt": 0, "censored": 0,
                       "history": 0, "request_capped": 0}  # fmt: skip
        #: per type: a need above its request seen (the request no longer bounds it)
        self.request_fell_short: dict[Hashable, bool] = {}
        if history is not None and len(history):
            self._start(history, columns)

    def _start(self, history: pd.DataFrame, columns: list[str]) -> None:
        """Each type's history: the table's training rows that ran with a measured need."""
        cores = trace_cores(history)
        need = numeric_column(history, value_col("memory")) * MB
        wall = numeric_column(history, value_col("walltime"))
        request = numeric_column(history, request_col("memory")) * MB
        ok = np.isfinite(need) & (need > 0) & np.isfinite(wall) & (wall > 0)
        keys = type_keys(history, columns)
        for key in dict.fromkeys(k for k, good in zip(keys, ok, strict=True) if good):
            at = ok & np.fromiter((k == key for k in keys), bool, len(keys))
            features = [Release(cores=c, request=r) for c, r in zip(cores[at], request[at],
                                                                   strict=True)]  # fmt: skip
            self.sizer.start_type(key, features, need[at], wall[at])
            short = need[at] > self._incumbent(request[at]) * MB
            self.request_fell_short[key] = bool(np.any(short))
            self.counts["history"] += int(at.sum())

    def _incumbent(self, request: np.ndarray) -> np.ndarray:
        """MB per core the request strategy gives: the request (bytes per core), else the
        site's default, as the plan's ``ram``."""
        mb = request / MB
        return np.where(np.isnan(mb) | (mb <= 0), self.default_mb, mb)

    def _ram(self, per_core: float) -> float:
        """The ramCount (MB/core) of a need per core the sizer plans for (bytes)."""
        ok = np.isfinite(per_core) and per_core > 0
        return per_core / self.grace / MB if ok else np.nan

    def _bytes_per_core(self, unit: int, job_mb: float) -> float:
        """A job's memory as the replay tells it (MB per job) in the sizer's unit."""
        return job_mb * MB / self.cores[unit]

    def first(self, task: int, unit: int) -> float:
        key = self.keys[unit]
        ram = self._ram(self.sizer.first(key, self.features[unit]))
        self.counts["sized" if ram == ram else "unsized"] += 1
        request = self.incumbent[unit]
        if ram > request and not self.request_fell_short.get(key, False):
            self.counts["request_capped"] += 1
            return request
        return ram

    def walltime(self, task: int, unit: int) -> float:
        """Memory only: the walltime is the plan's (the user's request)."""
        return np.nan

    def retry(self, task: int, unit: int, failed: float) -> float:
        self.counts["retries"] += 1
        failed = self._bytes_per_core(unit, failed)
        return self._ram(self.sizer.retry(self.keys[unit], self.features[unit], failed))

    def learn(self, task: int, unit: int, outcome: Outcome) -> None:
        if not outcome.need > 0:  # a job without a measured need teaches nothing
            return
        key = self.keys[unit]
        need = self._bytes_per_core(unit, outcome.need)
        given = self.incumbent[unit] * MB
        if need > given or (outcome.censored and need >= given):  # it fell short of the need
            self.request_fell_short[key] = True
        self.sizer.learn(key, self.features[unit], Outcome(need, outcome.runtime, outcome.censored))
        self.counts["learnt"] += 1
        self.counts["censored"] += int(outcome.censored)

    def summary(self) -> dict[str, float]:
        return {**{k: float(v) for k, v in self.counts.items()},
                "task_types": float(len(self.sizer.keys()))}  # fmt: skip
