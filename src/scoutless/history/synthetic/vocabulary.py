"""ATLAS-shaped vocabularies the generator draws from, shipped in ``defaults/atlas_vocabulary.toml``.

The file is part of the package (never read from ../shared/ at run time); its header says
which lists and shares were derived from the real ATLAS DKB task sample.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

VOCABULARY_RESOURCE = "atlas_vocabulary.toml"

#: Task families, in the order of the integer codes used throughout the generator.
FAMILIES: tuple[str, ...] = (
    "evgen", "simul", "pile", "reco", "reprocessing", "deriv", "merge", "eventindex",
    "user_athena", "user_gen",
)  # fmt: skip


@dataclass(frozen=True)
class Release:
    transhome: str  # e.g. "AthSimulation" ("" for tasks without an Athena release)
    version: str  # e.g. "21.0"
    first: int
    last: int
    architecture: str


@dataclass(frozen=True)
class Vocabulary:
    """Everything named: families' shares, transformations, releases, users, sites."""

    family_share: np.ndarray  # per FAMILIES
    special_processing: dict[str, float]
    transformations: dict[str, tuple[tuple[str, float], ...]]
    releases: dict[str, tuple[Release, ...]]
    drift_release: Release
    drift_families: tuple[str, ...]
    mc_campaigns: tuple[tuple[str, str, float, float], ...]  # campaign, project, mu, weight
    data_campaigns: tuple[tuple[str, str, float, float], ...]
    validation_project: str
    gshares: dict[str, str]
    workqueues: dict[str, tuple[int, int]]
    steps: dict[str, tuple[str, str, str]]
    production_users: tuple[str, ...]
    production_user_weights: np.ndarray
    analysis_users: tuple[str, ...]
    zipf_exponent: float
    generators: tuple[str, ...]
    processes: tuple[str, ...]
    analysis_words: tuple[str, ...]
    site_names: tuple[str, ...]
    site_core_power: np.ndarray  # HS06 per core
    requested_site_share: float


def _analysis_users(surnames: list[str], n: int) -> tuple[str, ...]:
    """Stable, seed-independent user names (initial + surname), as CERN logins look."""
    rng = np.random.default_rng(20240101)
    letters = np.array(list("abcdefghijklmnoprstvw"))
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n:
        name = f"{rng.choice(letters)}{rng.choice(surnames)}"[:8]
        if name not in seen:
            seen.add(name)
            names.append(name)
    return tuple(names)


def _release(row: list[Any]) -> Release:
    return Release(str(row[0]), str(row[1]), int(row[2]), int(row[3]), str(row[4]))


@lru_cache(maxsize=1)
def load_vocabulary() -> Vocabulary:
    text = resources.files("scoutless.defaults").joinpath(VOCABULARY_RESOURCE).read_text()
    raw = tomllib.loads(text)
    share = np.array([float(raw["task_mix"][f]) for f in FAMILIES])
    drift = raw["drift_release"]
    users = raw["users"]
    sites = raw["sites"]["list"]
    return Vocabulary(
        family_share=share / share.sum(),
        special_processing={k: float(v) for k, v in raw["special_processing"].items()},
        transformations={
            f: tuple((str(p), float(w)) for p, w in raw["transformations"][f]) for f in FAMILIES
        },
        releases={f: tuple(_release(r) for r in raw["releases"][f]) for f in FAMILIES},
        drift_release=Release(
            drift["transhome"],
            drift["version"],
            drift["first"],
            drift["last"],
            drift["architecture"],
        ),
        drift_families=tuple(drift["families"]),
        mc_campaigns=tuple((c, p, float(mu), float(w)) for c, p, mu, w in raw["campaigns"]["mc"]),
        data_campaigns=tuple(
            (c, p, float(mu), float(w)) for c, p, mu, w in raw["campaigns"]["data"]
        ),
        validation_project=raw["campaigns"]["validation_project"],
        gshares=dict(raw["gshares"]),
        workqueues={f: (int(a), int(b)) for f, (a, b) in raw["workqueues"].items()},
        steps={f: (s, fmt, tag) for f, (s, fmt, tag) in raw["steps"].items()},
        production_users=tuple(users["production"]),
        production_user_weights=np.array(users["production_weights"], dtype=float),
        analysis_users=_analysis_users(list(users["surnames"]), int(users["n_analysis"])),
        zipf_exponent=float(users["zipf_exponent"]),
        generators=tuple(raw["physics"]["generators"]),
        processes=tuple(raw["physics"]["processes"]),
        analysis_words=tuple(raw["physics"]["analysis_words"]),
        site_names=tuple(s for s, _ in sites),
        site_core_power=np.array([float(p) for _, p in sites]),
        requested_site_share=float(raw["sites"]["requested_share"]),
    )
