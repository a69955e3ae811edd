"""Hand-built workloads for the replay tests: a few tasks whose every number is chosen."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from scoutless.allocation.values import ConformalLevels, ValueDistribution
from scoutless.config import Settings, get_settings
from scoutless.features.encoded import InspectedFeatures
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


#: the submission features of a task of :func:`tasks_frame` with 30 one-file jobs
TASK_JOBS = {"corecount": 1, "cpuefficiency": 100, "input_nfiles": 30, "nfiles_per_job": 1}
#: the submission features a decision reads a task's job from (allocation/context.py)
JOB_FEATURES = ("corecount", "cpuefficiency", "basewalltime", "input_nfiles", "nfiles_per_job",
                "input_nevents", "nevents_per_job")  # fmt: skip


class ValuePredictor:
    """A stand-in bundle with the Predictor's value API: fixed value distributions per task,
    rows found by their ``key`` feature (the task id), some tasks' categories unknown."""

    def __init__(
        self,
        dists: dict[str, ValueDistribution],
        keys: list[int],
        unknown: tuple[int, ...] = (),
        levels: dict[str, ConformalLevels] | None = None,
        features: tuple[str, ...] = ("key", *JOB_FEATURES),
    ) -> None:
        self.version = "fake"
        self.targets = list(dists)
        self.feature_specs = [SimpleNamespace(name=n) for n in features]
        self.job_spreads = None
        self.room_loads = None
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

    def inspect(self, rows: pd.DataFrame) -> InspectedFeatures:
        """The rows' positions as the "encoded" features, their other columns as numbers."""
        numbers = {c: rows[c].to_numpy(float) for c in rows.columns if c != "key"}
        return InspectedFeatures(self._rows(rows), {}, numbers, self.unknown_categories(rows))

    def value_distributions(self, encoded: np.ndarray, targets: list[str]
                            ) -> dict[str, ValueDistribution]:  # fmt: skip
        return {t: self.dists[t].take(encoded) for t in targets}


def features_of(ids: list[int], **numbers: float) -> pd.DataFrame:
    """Submission features indexed by jeditaskid: the fake's ``key`` and the job's
    ``numbers`` (default: :data:`TASK_JOBS`, the job :func:`tasks_frame`'s tasks submit)."""
    given = {**TASK_JOBS, **numbers}
    columns = {"key": ids, **{k: [float(given.get(k, np.nan))] * len(ids) for k in JOB_FEATURES}}
    return pd.DataFrame(columns, index=pd.Index(ids, name="jeditaskid"))


