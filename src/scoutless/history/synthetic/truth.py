"""The generator's latent truth: P(class | submission-time features) for any bins.

Each task's target value is ``offset + exp(N(mu, sigma))`` given its features (exact for
memory, walltime and io by construction, calibrated for cputime), so the Bayes-optimal
classifier, and the best accuracy any model could reach, follow for any bin edges.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import ndtr
from sqlalchemy import BigInteger, Column, Engine, Float, Integer, String, Table, inspect, select

from scoutless.history.schema import metadata
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import TARGET_NAMES

synthetic_truth = Table(
    "scoutless_synthetic_truth",
    metadata,
    Column("jeditaskid", BigInteger, primary_key=True, autoincrement=False),
    Column("family", String(32)),
    Column("drifted", Integer, doc="1 when the release_drift scenario changed this task"),
    Column("n_units", Integer, doc="jobs that finished (failed attempts come on top)"),
    *[Column(f"{t}_{part}", Float) for t in TARGET_NAMES for part in ("mu", "sigma", "offset")],
)
TRUTH_COLUMNS = [c.name for c in synthetic_truth.columns]


def read_truth(engine: Engine, ids: Sequence[int] | None = None) -> pd.DataFrame | None:
    """Truth rows indexed by jeditaskid; None when the database holds no synthetic truth."""
    if not inspect(engine).has_table(synthetic_truth.name):
        return None
    stmt = select(synthetic_truth)
    frames = []
    with engine.connect() as conn:
        if ids is None:
            frames.append(pd.DataFrame(conn.execute(stmt).fetchall(), columns=TRUTH_COLUMNS))
        else:
            id_list = [int(i) for i in ids]
            for lo in range(0, len(id_list), 900):
                part = stmt.where(synthetic_truth.c.jeditaskid.in_(id_list[lo : lo + 900]))
                frames.append(pd.DataFrame(conn.execute(part).fetchall(), columns=TRUTH_COLUMNS))
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=TRUTH_COLUMNS)
    return frame.set_index("jeditaskid").sort_index()


def _cdf(truth: pd.DataFrame, target: str, x: float) -> np.ndarray:
    """P(value <= x) for each task."""
    mu = truth[f"{target}_mu"].to_numpy(float)
    sigma = np.maximum(truth[f"{target}_sigma"].to_numpy(float), 1e-9)
    above = x - truth[f"{target}_offset"].to_numpy(float)
    if np.isinf(x):
        return np.ones(len(truth))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (np.log(np.where(above > 0, above, np.nan)) - mu) / sigma
    return np.where(above > 0, ndtr(np.nan_to_num(z)), 0.0)


def bayes_probabilities(truth: pd.DataFrame, bins: dict[str, TargetBins]) -> dict[str, np.ndarray]:
    """Per target, an (n_tasks, n_classes) array of P(class | features), rows in truth order."""
    out: dict[str, np.ndarray] = {}
    for target, b in bins.items():
        if f"{target}_mu" not in truth.columns:
            raise KeyError(f"truth has no columns for target {target!r}; has {TARGET_NAMES}")
        cdf = np.stack([_cdf(truth, target, float(e)) for e in b.edges], axis=1)
        cdf[:, 0] = 0.0  # class 0 also holds edges[0] itself
        out[target] = np.clip(np.diff(cdf, axis=1), 0.0, 1.0)
    return out
