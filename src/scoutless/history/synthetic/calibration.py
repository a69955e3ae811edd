"""The generator's calibration: each task family's needs (:class:`FamilyModel`, medians and
spreads in :data:`MODELS`), the releases' effects, the drift factors, the seed-wide hidden
effects (:class:`World`), and a block's :class:`Draft` through which every draw reads them.

The draws themselves are ``latent.py`` (what a submitter writes) and ``needs.py`` (the
latent needs behind it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scoutless.history.synthetic.vocabulary import FAMILIES, Vocabulary

CORE_POWER_REF = 11.0  # HS06 per core of a typical grid slot


WALL_P95_FACTOR = 1.5  # G: P95 over a task's jobs relative to a typical job


DEFAULT_CPU_EFFICIENCY = 90.0


DEFAULT_BASE_WALLTIME = 600.0


@dataclass(frozen=True)
class FamilyModel:
    """Shape of one task family's needs (medians, task-to-task and within-task spreads)."""

    multicore_share: float
    per_worker_mb: float  # memory of one worker process
    shared_mb: float  # memory shared by the workers of an AthenaMP job
    mem_sigma: float  # task-to-task (log)
    mem_within: float  # job-to-job inside a task (log)
    cpu: float  # wall HS06 s per event per core, median
    cpu_sigma: float
    cpu_within: float
    kb_per_event: float  # read + written
    kb_sigma: float
    input_share: float  # of the bytes per event, the part read
    job_hours: float  # what the submitter aims a job to last
    job_hours_sigma: float
    nevents_choices: tuple[int, ...]  # nEventsPerJob choices; () -> nFilesPerJob tasks
    files_choices: tuple[int, ...]
    events_per_file: float
    mix_multi: float  # P(job core counts vary inside a multi-core task)
    mix_single: float
    fail_rate: float


MODELS: dict[str, FamilyModel] = {
    "evgen": FamilyModel(0.12, 900, 300, 0.2, 0.05, 60, 0.6, 0.3, 60, 0.3, 0.0, 9, 0.9,
                         (200, 500, 1000, 2000, 5000, 10000), (), 0, 0.5, 0.3, 0.06),
    "simul": FamilyModel(0.8, 450, 1400, 0.13, 0.06, 500, 0.3, 0.2, 1100, 0.25, 0.05, 20, 0.45,
                         (50, 100, 200, 500, 1000, 2000), (), 0, 0.95, 0.5, 0.05),
    "pile": FamilyModel(0.85, 1400, 1800, 0.13, 0.08, 45, 0.3, 0.2, 2600, 0.25, 0.75, 5, 0.4,
                        (250, 500, 1000, 2000), (), 0, 0.95, 0.5, 0.07),
    "reco": FamilyModel(0.75, 1100, 1500, 0.14, 0.08, 25, 0.3, 0.2, 2200, 0.25, 0.7, 4, 0.4,
                        (250, 500, 1000, 2000, 5000), (), 0, 0.95, 0.5, 0.06),
    "reprocessing": FamilyModel(0.95, 1150, 1700, 0.12, 0.07, 35, 0.3, 0.2, 1500, 0.25, 0.7,
                                4, 0.35, (500, 1000, 2000, 5000), (), 0, 0.95, 0.5, 0.05),
    "deriv": FamilyModel(0.35, 2200, 900, 0.16, 0.10, 5.0, 0.35, 0.25, 450, 0.3, 0.93, 2.5,
                         0.5, (2000, 5000, 10000, 20000, 50000), (), 0, 0.8, 0.5, 0.04),
    "merge": FamilyModel(0.0, 650, 300, 0.22, 0.15, 0.4, 0.4, 0.3, 150, 0.5, 0.5, 0.4, 0.6,
                         (), (5, 10, 20, 50), 2000, 0.0, 0.1, 0.03),
    "eventindex": FamilyModel(0.0, 500, 200, 0.15, 0.10, 0.15, 0.4, 0.3, 100, 0.3, 0.99, 0.2,
                              0.5, (), (1, 2, 5), 5000, 0.0, 0.05, 0.03),
    "user_athena": FamilyModel(0.05, 1700, 300, 0.3, 0.15, 5.0, 0.5, 0.35, 60, 0.6, 0.85,
                               2.0, 1.1, (), (1, 2, 3, 5, 10, 20), 20000, 0.2, 0.04, 0.09),
    "user_gen": FamilyModel(0.03, 1000, 100, 0.4, 0.2, 2.0, 0.55, 0.4, 30, 0.7, 0.9, 1.5, 1.2,
                            (), (1, 2, 3, 5, 10, 20), 20000, 0.1, 0.03, 0.10),
}  # fmt: skip


#: Release series -> (memory, cpu) multipliers: AthenaMT and newer compilers save both.
VERSION_EFFECT: dict[str, tuple[float, float]] = {
    "19.2.5": (0.8, 1.3), "20.7": (1.1, 1.2), "20.7.5": (1.1, 1.2), "21.0": (1.0, 1.0),
    "21.2": (1.0, 1.0), "21.6": (1.0, 1.0), "22.0": (0.9, 0.85), "23.0": (0.75, 0.8),
    "24.0": (0.75, 0.8), "24.2": (0.9, 0.9), "": (1.0, 1.0),
}  # fmt: skip


DRIFT_MEMORY_FACTOR = 1.75


DRIFT_CPU_FACTOR = 1.5


MULTICORE_CHOICES = np.array([8, 4, 16])


MULTICORE_P = np.array([0.85, 0.05, 0.10])


@dataclass
class World:
    """Seed-wide hidden effects: per user and per release patch (fixed for a whole run)."""

    user_mem: np.ndarray
    user_cpu: np.ndarray
    user_kb: np.ndarray
    user_p: np.ndarray  # Zipf activity
    release_mem: np.ndarray  # [family, release, patch]
    release_cpu: np.ndarray
    site_speed: np.ndarray  # per site: wall multiplier its corePower does not show

    @classmethod
    def build(cls, vocab: Vocabulary, seed: int, site_speed_sigma: float = 0.0) -> World:
        rng = np.random.default_rng([seed, 7])
        n = len(vocab.analysis_users)
        p = 1.0 / np.arange(1, n + 1) ** vocab.zipf_exponent
        shape = (len(FAMILIES), 3, 400)
        return cls(
            user_mem=rng.normal(0, 0.35, n),
            user_cpu=rng.normal(0, 0.6, n),
            user_kb=rng.normal(0, 0.5, n),
            user_p=p / p.sum(),
            release_mem=rng.normal(0, 0.06, shape),
            release_cpu=rng.normal(0, 0.08, shape),
            site_speed=np.exp(rng.normal(0, site_speed_sigma, len(vocab.site_names))),
        )


def draw_index(rng: np.random.Generator, n: int, p: np.ndarray | list[float]) -> np.ndarray:
    """``n`` indexes into ``p``, each drawn with its weight (normalised)."""
    p = np.asarray(p, dtype=float)
    return rng.choice(len(p), size=n, p=p / p.sum())


@dataclass(frozen=True)
class Draft:
    """What every section of :func:`draw_tasks` reads: the rng and each task's family."""

    rng: np.random.Generator
    vocab: Vocabulary
    world: World
    fam: np.ndarray
    is_user: np.ndarray

    @classmethod
    def drawn(cls, rng: np.random.Generator, vocab: Vocabulary, world: World, n: int) -> Draft:
        """``n`` tasks' families, drawn from the vocabulary's family shares."""
        fam = draw_index(rng, n, vocab.family_share)
        is_user = np.isin(fam, [FAMILIES.index("user_athena"), FAMILIES.index("user_gen")])
        return cls(rng, vocab, world, fam, is_user)

    @property
    def n(self) -> int:
        return len(self.fam)

    def per_fam(self, attr: str) -> np.ndarray:
        return np.array([getattr(MODELS[f], attr) for f in FAMILIES], dtype=float)[self.fam]

    def is_family(self, *names: str) -> np.ndarray:
        return np.isin(self.fam, [FAMILIES.index(f) for f in names])
