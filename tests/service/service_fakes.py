"""A small stand-in for ``scoutless.bundle.Predictor``: the real feature encoder, fake models.

Probabilities come from a hash of each row's features, so they are deterministic and
differ between tasks; the calibration set is fixed. Used where a real bundle would only
slow a test down (the real bundle is exercised in ``test_real_bundle.py``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from starlette.types import ASGIApp, Receive, Scope, Send

from scoutless.features.encoded import EncodedFeatures, InspectedFeatures
from scoutless.features.encoders import FeatureEncoder
from scoutless.features.spec import PANDA_FEATURES
from scoutless.history.db_write import write_frame
from scoutless.history.panda_db import create_schema, make_engine
from scoutless.targets.bins import load_bins

#: a token with the predict and read roles (the tests' default caller, tests/service/conftest)
TOKEN = "tester-token-0123456789"
#: where TestClient's requests come from when a test wants a loopback caller
LOOPBACK = ("127.0.0.1", 50000)

PROCESSING_TYPES = ["evgen", "simul", "reco", "deriv", "merge"]


def held_app(release: asyncio.Event) -> ASGIApp:
    """An ASGI app that answers 200 once ``release`` is set, never reading the body (as a
    GET route does): each request holds what the middleware gave it until then."""

    async def held(scope: Scope, receive: Receive, send: Send) -> None:
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    return held


def task(**overrides: Any) -> dict[str, Any]:
    """A valid feature dict for one task."""
    row: dict[str, Any] = {s.name: None for s in PANDA_FEATURES}
    row.update(
        prodsourcelabel="managed", tasktype="prod", processingtype="simul",
        transpath="Sim_tf.py", corecount=8.0, baseramcount=0.0, basewalltime=600.0,
        cpuefficiency=90.0, requested_ramcount=2000.0, nevents_per_job=100.0,
        nfiles_per_job=1.0, n_input_datasets=1.0, input_nfiles=10.0, input_nevents=1000.0,
    )  # fmt: skip
    row.update(overrides)
    return row


def _fitted_encoder() -> FeatureEncoder:
    rows = [task(processingtype=p, corecount=float(c)) for p in PROCESSING_TYPES for c in (1, 8)]
    return FeatureEncoder(list(PANDA_FEATURES), min_count=1).fit(pd.DataFrame(rows))


class FakePredictor:
    def __init__(self, version: str = "fake-1", targets: list[str] | None = None) -> None:
        self.version = version
        self.targets = targets or ["memory", "cputime", "io", "walltime"]
        self.bins = load_bins(targets=self.targets)
        self.feature_specs = list(PANDA_FEATURES)
        self.job_spreads = None
        self.room_loads = None
        self.manifest = {"version": version, "targets": self.targets, "fake": True}
        self.encoder = _fitted_encoder()

    def has_values(self, target: str) -> bool:
        return False

    def validate_frame(self, data: Any) -> pd.DataFrame:
        return self.encoder.validate(data)

    def unknown_categories(self, frame: Any) -> list[dict[str, str]]:
        return self.encoder.unknown_categories(frame)

    def inspect(self, data: Any) -> InspectedFeatures:
        return self.encoder.inspect(data)

    def predict_encoded(self, encoded: EncodedFeatures, target: str) -> np.ndarray:
        keys = [
            f"{codes.tolist()}{numeric.tolist()}"
            for codes, numeric in zip(encoded.codes, encoded.numeric, strict=True)
        ]
        k = self.bins[target].n_classes
        digests = [
            hashlib.md5(f"{self.version}{target}{key}".encode()).digest()[:k] for key in keys
        ]
        logits = np.frombuffer(b"".join(digests), dtype=np.uint8).reshape(-1, k) / 40.0
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def predict_proba(self, data: Any, targets=None, model=None) -> dict[str, np.ndarray]:
        encoded = self.encoder.transform(data)
        return {t: self.predict_encoded(encoded, t) for t in targets or self.targets}

    def calibration(self, target: str) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(0)
        proba = rng.dirichlet(np.ones(self.bins[target].n_classes), size=200)
        return proba, proba.argmax(axis=1)


def fake_loader(path) -> FakePredictor:
    """Loader for create_app(loader=…): the bundle 'version' is the folder's name."""
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such bundle folder")
    return FakePredictor(version=str(path.name))


def panda_history(db_url: str) -> str:
    """``db_url`` made a PanDA history without tasks yet (its tables: /readyz needs them)."""
    create_schema(make_engine(db_url))
    return db_url


def store_task(db_url: str, jeditaskid: int, corecount: int = 8) -> None:
    """A task in a PanDA-schema database (its row and parameters; no datasets, no jobs)."""
    engine = make_engine(db_url)
    create_schema(engine)
    write_frame(
        engine,
        "jedi_tasks",
        pd.DataFrame(
            [
                {
                    "jeditaskid": jeditaskid,
                    "taskname": "mc16_13TeV.1.Sim",
                    "username": "prod",
                    "status": "defined",
                    "creationdate": datetime(2026, 1, 1),
                    "modificationtime": datetime(2026, 1, 1),
                    "prodsourcelabel": "managed",
                    "processingtype": "simul",
                    "corecount": corecount,
                    "ramcount": 99999,  # measured by scouts: must not matter
                }
            ]
        ),
    )
    params = {"ramCount": 2000, "nEventsPerJob": 100, "nFilesPerJob": 1}
    write_frame(
        engine,
        "jedi_taskparams",
        pd.DataFrame([{"jeditaskid": jeditaskid, "taskparams": json.dumps(params)}]),
    )
    engine.dispose()
