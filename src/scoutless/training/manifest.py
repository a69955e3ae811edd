"""What a bundle's manifest says about its training run: provenance, metrics, champions."""

from __future__ import annotations

import contextlib
import platform
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

import numpy as np

from scoutless.evaluation.metrics import classification_metrics
from scoutless.history.table import TrainingTable

#: distributions whose versions a bundle records (both xgboost wheels: either may be installed)
RECORDED_LIBRARIES = ("scoutless", "numpy", "pandas", "scikit-learn", "xgboost-cpu", "xgboost",
                      "torch", "optuna")  # fmt: skip


def library_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in RECORDED_LIBRARIES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[dist] = metadata.version(dist)
    return out


def headline_metrics(y: np.ndarray, proba: np.ndarray, labels: tuple[str, ...]) -> dict[str, Any]:
    """Accuracy, macro-F1 (over all classes of the target) and the row count of one part."""
    m = classification_metrics(y, proba.argmax(axis=1), labels)
    return {"accuracy": m["accuracy"], "macro_f1": m["macro_f1"], "n": m["n"]}


def choose_champion(metrics: dict[str, dict[str, float]]) -> str:
    """The model with the best mean of validation accuracy and macro-F1 (first on ties)."""
    return max(metrics, key=lambda m: (metrics[m]["accuracy"] + metrics[m]["macro_f1"]) / 2)


def base_manifest(table: TrainingTable, run: dict[str, Any]) -> dict[str, Any]:
    """Version, provenance and schema of a bundle trained on ``table``; ``run`` is the
    manifest's ``training`` section (split, seed, parts …)."""
    fingerprint = table.fingerprint()
    created = datetime.now(UTC)
    return {
        "version": f"{created:%Y%m%dT%H%M%SZ}-{fingerprint[:8]}",
        "created": created.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "data_fingerprint": fingerprint,
        "source": table.source,
        "table_info": table.info,
        "features": [f.to_dict() for f in table.features],
        "targets": table.targets,
        # fitted on the table's training rows: the bundle recommends what the table does
        "bins": {t: b.to_dict() for t, b in table.bins.items()},
        "library_versions": library_versions(),
        "training": run,
    }
