"""Hand-made fakes for the ops tests: bundles as bare manifests, a scripted predictor."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from scoutless.targets.bins import load_bins


def make_fake_bundle(folder: Path, version: str) -> Path:
    """A folder with a manifest: enough for the registry once the deep load is stubbed."""
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"version": version, "created": version}))
    (folder / "model.bin").write_bytes(b"weights of " + version.encode())
    return folder


class ScriptedPredictor:
    """Predicts memory class = a fixed function of processingtype; other targets class 0."""

    def __init__(
        self, version: str, mapping: dict[str, int], reference: pd.DataFrame | None = None
    ):
        self.version = version
        self.mapping = mapping
        self.bins = load_bins(targets=["memory", "io"])
        self.feature_specs = []
        self._reference = reference if reference is not None else pd.DataFrame()

    def predict_proba(self, data: pd.DataFrame, targets=None, model=None) -> dict[str, np.ndarray]:
        out = {}
        for target in targets or list(self.bins):
            k = self.bins[target].n_classes
            if target == "memory":
                cls = data["processingtype"].map(self.mapping).fillna(0).astype(int).to_numpy()
            else:
                cls = np.zeros(len(data), dtype=int)
            out[target] = np.eye(k)[cls] * 0.9 + 0.1 / k
        return out

    def reference(self) -> pd.DataFrame:
        return self._reference.copy()


T0 = pd.Timestamp("2026-01-01 00:00:00")


def small_history(memory_gb: dict[int, float], status: dict[int, str] | None = None) -> dict:
    """PanDA rows: one single-core task per id, 5 finished jobs using ``memory_gb`` each."""
    tasks, jobs = [], []
    pandaid = 1
    for tid, gb in memory_gb.items():
        tasks.append({"jeditaskid": tid, "taskname": f"mc.{tid}", "processingtype": "simul",
                      "corecount": 1, "baseramcount": 0, "basewalltime": 600,
                      "cpuefficiency": 90, "prodsourcelabel": "managed",
                      "status": (status or {}).get(tid, "done"),
                      "username": "prod", "creationdate": T0,
                      "modificationtime": T0})  # fmt: skip
        for j in range(5):
            start = T0 + pd.Timedelta(hours=1, minutes=j)
            jobs.append({"pandaid": pandaid, "jeditaskid": tid, "jobstatus": "finished",
                         "modificationtime": start + pd.Timedelta(hours=2),
                         "attemptnr": 1, "cpuconsumptiontime": 6000, "corecount": 1, "actualcorecount": 1,
                         "maxpss": int(gb * 1024 * 1024), "starttime": start,
                         "endtime": start + pd.Timedelta(hours=2), "nevents": 100,
                         "inputfilebytes": int(1e9), "outputfilebytes": int(1e8),
                         "hs06": 10})  # fmt: skip
            pandaid += 1
    return {"jedi_tasks": pd.DataFrame(tasks), "jobsarchived4": pd.DataFrame(jobs)}


def prediction_rows(
    ids: list[int],
    classes: list[int],
    *,
    target: str = "memory",
    version: str = "v1",
    created_at: pd.Timestamp = T0,
    features: list[dict] | None = None,
) -> list[dict]:
    """Rows as the service writes them to the prediction log (one per task)."""
    rows = []
    for i, (tid, cls) in enumerate(zip(ids, classes, strict=True)):
        entry = {"class_id": cls, "class_label": str(cls), "recommended_value": None,
                 "probabilities": []}  # fmt: skip
        rows.append({"request_id": f"r{tid}", "jeditaskid": tid, "model_version": version,
                     "policy": "argmax", "predictions": {target: entry},
                     "features": json.dumps(features[i]) if features else None,
                     "created_at": created_at.to_pydatetime()})  # fmt: skip
    return rows
