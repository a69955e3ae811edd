"""Hand-built workloads for the replay tests: a few tasks whose every number is chosen."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from scoutless.allocation.values import ConformalLevels, ValueDistribution
from scoutless.config import Settings, get_settings
from scoutless.replay.config import ReplaySettings, replay_settings
from scoutless.replay.engine import Replay
from scoutless.replay.plan import StrategyPlan
from scoutless.replay.pool import SlotPool, pool_cores
from scoutless.replay.workload import TaskEstimator, Workload

START = pd.Timestamp("2024-01-01")


def jobs_frame(
    task: int,
    walls_h: list[float],
    pss_mb: list[float],
    *,
    scouts: int = 0,
    cores: int = 1,
    first_pandaid: int = 1,
) -> pd.DataFrame:
    """jobsarchived4 rows of one task: wall hours, maxPSS MB, the first ``scouts`` flagged."""
    n = len(walls_h)
    start = START + pd.Timedelta(days=task)
    return pd.DataFrame(
        {
            "pandaid": np.arange(first_pandaid, first_pandaid + n),
            "jeditaskid": task,
            "jobstatus": "finished",
            "specialhandling": ["sj" if i < scouts else None for i in range(n)],
            "corecount": cores,
            "actualcorecount": cores,
            "maxpss": np.asarray(pss_mb, dtype=float) * 1024,
            "starttime": start,
            "endtime": [start + pd.Timedelta(hours=w) for w in walls_h],
            "nevents": 1000,
            "hs06": 10 * cores,
        }
    )  # fmt: skip


def tasks_frame(ids: list[int], submit_h: list[float] | None = None) -> pd.DataFrame:
    submit_h = submit_h or [0.0] * len(ids)
    return pd.DataFrame(
        {
            "jeditaskid": ids,
            "creationdate": [START + pd.Timedelta(hours=h) for h in submit_h],
            "corecount": 1,
            "baseramcount": 0,
            "basewalltime": 0,
            "cpuefficiency": 100,
            "processingtype": "simul",
        }
    )


ROOMY = {name: {"cores": 64} for name in ("SCORE", "MCORE", "SCORE_HIMEM", "MCORE_HIMEM")}


def settings_with(**replay: object) -> Settings:
    replay = {"resource_types": ROOMY, **replay}
    cfg = replay_settings(ReplaySettings(), **replay)
    return get_settings().model_copy(update={"replay": cfg})


def replay(
    work: Workload,
    settings: Settings,
    *,
    ram: float,
    cputime: float = float("nan"),
    scouts: bool = False,
    retune: bool = False,
    lowers: bool = True,
) -> Replay:
    """One strategy with the same ramCount/cpuTime for every task, run."""
    plan = StrategyPlan(
        "test", np.full(work.n_tasks, ram), np.full(work.n_tasks, cputime), scouts, retune, lowers
    )
    cfg = settings.replay
    pool = SlotPool(cfg.resource_types, pool_cores(work, cfg))
    run = Replay(work, plan, cfg, pool, TaskEstimator(work, settings))
    run.result_ = run.run()
    return run


class ValuePredictor:
    """A stand-in bundle with the Predictor's value API: fixed value distributions per task,
    rows found by their ``key`` feature (the task id), some tasks' categories unknown."""

    def __init__(
        self,
        dists: dict[str, ValueDistribution],
        keys: list[int],
        unknown: tuple[int, ...] = (),
        levels: dict[str, ConformalLevels] | None = None,
    ) -> None:
        self.version = "fake"
        self.targets = list(dists)
        self.feature_specs = [SimpleNamespace(name="key")]
        self.dists, self.keys, self.unknown, self.levels = dists, list(keys), unknown, levels or {}

    def _rows(self, rows: pd.DataFrame) -> np.ndarray:
        return np.array([self.keys.index(k) for k in rows["key"]])

    def has_values(self, target: str) -> bool:
        return target in self.dists

    def value_distribution(self, rows: pd.DataFrame, target: str) -> ValueDistribution:
        return self.dists[target].take(self._rows(rows))

    def value_levels(self, target: str) -> ConformalLevels | None:
        return self.levels.get(target)

    def unknown_categories(self, rows: pd.DataFrame) -> list[dict[str, str]]:
        return [{"processingtype": "new"} if k in self.unknown else {} for k in rows["key"]]


def features_of(ids: list[int]) -> pd.DataFrame:
    """Submission features indexed by jeditaskid: only the fake's ``key``."""
    return pd.DataFrame({"key": ids}, index=pd.Index(ids, name="jeditaskid"))
