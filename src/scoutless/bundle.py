"""Model bundles: a versioned folder holding everything a prediction needs, and its Predictor.

Layout::

    BUNDLE/manifest.json                 version, data fingerprint, schema, bins, metrics, champions,
                                         library versions at training (``libraries``)
    BUNDLE/encoder.json                  fitted FeatureEncoder
    BUNDLE/models/<target>/<model>.*     one fitted model per target and family
    BUNDLE/calibration/<target>/<model>.npz   held-out probabilities + true classes
    BUNDLE/values/<target>/              the target's value model (models/value_model.py)
    BUNDLE/calibration/<target>/value.npz     its held-out scores (conformal levels)
    BUNDLE/reference.parquet             training feature sample + classes (drift reference)
    BUNDLE/job_spreads.json              optional: the jobs' spread around a task's value per
                                         task kind, learnt from a history's jobs
                                         (allocation/spread_table.py); without it a decision
                                         prices every job at its task's value
    BUNDLE/room_loads.json               optional: each width's HIMEM and long-queue load,
                                         learnt likewise (allocation/room_loads.py); without
                                         it a decision prices those rooms at load 0

A bundle is written into a hidden sibling folder, fsynced, and swapped into place in one
atomic step at the end (``atomic.atomic_folder``), so an interrupted run — an exception, a
SIGKILL, a power loss — leaves no half bundle and the existing one until it succeeds.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoutless.allocation.room_loads import RoomLoads
from scoutless.allocation.spread_table import SpreadTable
from scoutless.allocation.values import ConformalLevels, ValueDistribution
from scoutless.atomic import atomic_folder
from scoutless.features.encoded import EncodedFeatures, InspectedFeatures
from scoutless.features.encoders import FeatureEncoder
from scoutless.features.schema import FeatureInput, SchemaError
from scoutless.features.spec import FeatureSpec
from scoutless.layout import MANIFEST_FILE, BundleError, read_manifest, resolve_champion
from scoutless.libraries import library_versions, version_mismatch
from scoutless.models.base import ClassModel
from scoutless.models.families import UnknownFamilyError, family_class
from scoutless.models.guard import ServingGuard, baseline_classes, baseline_feature_columns
from scoutless.models.value_model import LogValueModel, ValueModels
from scoutless.targets.bins import TargetBins

logger = logging.getLogger("scoutless.bundle")

MANIFEST = MANIFEST_FILE
ENCODER = "encoder.json"
REFERENCE = "reference.parquet"
JOB_SPREADS = "job_spreads.json"
ROOM_LOADS = "room_loads.json"
FORMAT_VERSION = 1
#: the kind of conformal score a bundle's value calibration holds (allocation.values)
VALUE_SCORE = "standardised-residual"
#: Pseudo-model name of the guarded champion (:mod:`scoutless.models.guard`).
SERVED = "served"

__all__ = [
    "BundleContents",
    "BundleError",
    "Predictor",
    "SchemaError",
    "load_bundle",
    "read_manifest",
    "save_bundle",
]


@dataclass
class BundleContents:
    """What training hands to :func:`save_bundle` (the manifest is completed there)."""

    manifest: dict[str, Any]
    encoder: FeatureEncoder
    models: dict[str, dict[str, ClassModel]]
    #: target -> model -> (probabilities, true classes, row numbers in the table's frame)
    calibration: dict[str, dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]]
    reference: pd.DataFrame
    #: target -> its value model and its calibration rows' conformal scores (bundles without:
    #: the value and cost policies are refused with a message naming the bundle)
    value_models: dict[str, LogValueModel] = field(default_factory=dict)
    value_scores: dict[str, np.ndarray] = field(default_factory=dict)


def _write_values(folder: Path, contents: BundleContents) -> dict[str, dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    for target, model in contents.value_models.items():
        rel = Path("values") / target
        files = model.save(folder / rel)
        scores = Path("calibration") / target / "value.npz"
        (folder / scores).parent.mkdir(parents=True, exist_ok=True)
        np.savez(folder / scores, scores=contents.value_scores[target])
        entries[target] = {
            "folder": rel.as_posix(), "files": files, "scores": scores.as_posix(),
            "score": VALUE_SCORE,
        }  # fmt: skip
    return entries


def _write_contents(folder: Path, contents: BundleContents) -> None:
    manifest = dict(contents.manifest)
    manifest["format_version"] = FORMAT_VERSION
    manifest.setdefault("libraries", library_versions())
    (folder / ENCODER).write_text(json.dumps(contents.encoder.to_dict()))
    files: dict[str, dict[str, Any]] = {}
    for target, by_name in contents.models.items():
        files[target] = {}
        for name, model in by_name.items():
            rel = Path("models") / target / name
            written = model.save(folder / rel)
            files[target][name] = {"folder": rel.as_posix(), "files": written}
    manifest["models"] = files
    calibration: dict[str, dict[str, str]] = {}
    for target, by_name in contents.calibration.items():
        calibration[target] = {}
        for name, (proba, y, rows) in by_name.items():
            rel = Path("calibration") / target / f"{name}.npz"
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            np.savez(folder / rel, proba=proba, y=y, rows=rows)
            calibration[target][name] = rel.as_posix()
    manifest["calibration"] = calibration
    manifest["value_models"] = _write_values(folder, contents)
    contents.reference.to_parquet(folder / REFERENCE, index=False)
    manifest["reference"] = REFERENCE
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1, default=str))


def save_bundle(
    out: str | Path,
    contents: BundleContents,
    *,
    write: Callable[[Path, BundleContents], None] = _write_contents,
) -> Path:
    """Write the bundle to ``out`` atomically: a hidden sibling folder, then a rename."""
    out = Path(out)
    with atomic_folder(out) as staging:
        write(staging, contents)
    return out


class Predictor:
    """Class probabilities per target from a loaded bundle; the service's only model API."""

    def __init__(
        self,
        path: Path,
        manifest: dict[str, Any],
        encoder: FeatureEncoder,
        models: dict[str, dict[str, ClassModel]],
        value_models: dict[str, LogValueModel] | None = None,
    ) -> None:
        self.path = path
        self._value_models = dict(value_models or {})
        self._value_levels: dict[str, ConformalLevels] = {}
        self._joint_values: dict[tuple[str, ...], ValueModels] = {}
        self.manifest = manifest
        self.version: str = manifest["version"]
        self.targets: list[str] = list(manifest["targets"])
        self.bins: dict[str, TargetBins] = {
            t: TargetBins.from_dict(b) for t, b in manifest["bins"].items()
        }
        self.feature_specs: list[FeatureSpec] = [
            FeatureSpec.from_dict(f) for f in manifest["features"]
        ]
        self.encoder = encoder
        self._models = models
        self.guards: dict[str, ServingGuard] = {
            t: ServingGuard.from_dict(g) for t, g in manifest.get("guard", {}).items()
        }
        self._calibration: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self._reference: pd.DataFrame | None = None
        #: xgboost/torch/scikit-learn here differ from training (a sentence), or None
        self.library_warning: str | None = version_mismatch(manifest.get("libraries"))
        #: the jobs' spread per task kind the decision prices (None: the bundle has none)
        self.job_spreads: SpreadTable | None = read_job_spreads(path)
        #: the room loads its training history showed (None: the bundle has none)
        self.room_loads: RoomLoads | None = read_room_loads(path)

    def __repr__(self) -> str:
        return f"Predictor(version={self.version!r}, targets={self.targets}, path={self.path})"

    def _check_target(self, target: str) -> None:
        if target not in self._models:
            raise KeyError(f"bundle {self.version} has no target {target!r}; it has {self.targets}")

    def models(self, target: str) -> list[str]:
        """Model families of ``target``, plus ``served`` where a guard wraps the champion."""
        self._check_target(target)
        return list(self._models[target]) + ([SERVED] if target in self.guards else [])

    def champion(self, target: str) -> str:
        self._check_target(target)
        return self.manifest["champion"][target]

    def _model(self, target: str, model: str | None) -> tuple[str, ClassModel]:
        name = model or self.champion(target)
        if name == SERVED and target in self.guards:
            name = self.guards[target].model
        if name not in self._models[target]:
            raise KeyError(
                f"bundle {self.version}: target {target!r} has no model {name!r}; "
                f"available: {self.models(target)}"
            )
        return name, self._models[target][name]

    def validate_frame(self, data: FeatureInput) -> pd.DataFrame:
        """Typed frame in feature order; :class:`SchemaError` names wrong columns and types."""
        return self.encoder.validate(data)

    def unknown_categories(self, frame: FeatureInput) -> list[dict[str, str]]:
        return self.encoder.unknown_categories(frame)

    def predict_proba(
        self, data: FeatureInput, targets: list[str] | None = None, model: str | None = None
    ) -> dict[str, np.ndarray]:
        """(n, n_classes) probabilities per target; the champion unless ``model`` is named."""
        wanted = self.targets if targets is None else list(targets)
        for t in wanted:  # refuse an unknown target or model before encoding anything
            self._check_target(t)
            self._model(t, model)
        encoded = self.encoder.transform(data)
        return {t: self.predict_encoded(encoded, t, model) for t in wanted}

    def inspect(self, data: FeatureInput) -> InspectedFeatures:
        """Validate and encode once (arrays, typed values, unknown categories) for serving."""
        return self.encoder.inspect(data)

    def predict_encoded(
        self, encoded: EncodedFeatures, target: str, model: str | None = None
    ) -> np.ndarray:
        """(n, n_classes) probabilities of one target from already encoded features."""
        self._check_target(target)
        proba = self._model(target, model)[1].predict_proba(encoded)
        guard = self.guards.get(target)
        if guard is None or model not in (None, SERVED):
            return proba
        return guard.apply(proba, self.baseline_classes(encoded, target))

    def baseline_classes(self, encoded: EncodedFeatures, target: str) -> np.ndarray | None:
        """The guard's baseline class per row (from the encoded inputs), None without one."""
        guard = self.guards.get(target)
        if guard is None or guard.baseline is None:
            return None
        column = baseline_feature_columns(target)[guard.baseline]
        return baseline_classes(encoded, self.encoder, column, self.bins[target].n_classes)

    def calibration(self, target: str, model: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Held-out calibration probabilities (n_cal, K) and true classes of a target's model."""
        name, _ = self._model(target, model)
        key = (target, name)
        if key not in self._calibration:
            rel = self.manifest["calibration"][target][name]
            with np.load(self.path / rel) as arrays:
                self._calibration[key] = (arrays["proba"], arrays["y"])
        return self._calibration[key]

    def calibration_rows(self, target: str, model: str | None = None) -> np.ndarray:
        """Row numbers (in the training table's frame) of the calibration set."""
        name, _ = self._model(target, model)
        with np.load(self.path / self.manifest["calibration"][target][name]) as arrays:
            return arrays["rows"]

    def has_values(self, target: str) -> bool:
        """Whether the bundle has a value model for ``target`` (older bundles do not)."""
        return target in self._value_models

    def _value_model(self, target: str) -> LogValueModel:
        self._check_target(target)
        if target not in self._value_models:
            raise BundleError(
                f"bundle {self.version} has no value model for {target!r} (trained before "
                "value allocations): the value and cost policies need a bundle trained now"
            )
        return self._value_models[target]

    def value_distribution(
        self, data: FeatureInput | EncodedFeatures, target: str
    ) -> ValueDistribution:
        """Each task's value distribution for ``target`` (features, or already encoded)."""
        model = self._value_model(target)
        encoded = data if isinstance(data, EncodedFeatures) else self.encoder.transform(data)
        return model.predict_dist(encoded)

    def value_distributions(
        self, encoded: EncodedFeatures, targets: Sequence[str]
    ) -> dict[str, ValueDistribution]:
        """:meth:`value_distribution` of several targets, predicted together (a served
        request's: :class:`~scoutless.models.value_model.ValueModels`), the same numbers."""
        key = tuple(targets)
        joint = self._joint_values.get(key)
        if joint is None:
            joint = ValueModels({t: self._value_model(t) for t in key})
            self._joint_values[key] = joint
        return joint.predict_dists(encoded)

    def value_levels(self, target: str) -> ConformalLevels:
        """The target's conformal levels, from the held-out calibration rows' scores."""
        self._value_model(target)
        if target not in self._value_levels:
            entry = self.manifest["value_models"][target]
            if entry.get("score") != VALUE_SCORE:
                raise BundleError(
                    f"bundle {self.version}: its {target!r} value calibration holds another "
                    "kind of score than this version reads; retrain the bundle"
                )
            rel = entry["scores"]
            with np.load(self.path / rel) as arrays:
                self._value_levels[target] = ConformalLevels(np.sort(arrays["scores"]))
        return self._value_levels[target]

    def reference(self) -> pd.DataFrame:
        """Training feature sample (<= 5000 rows) with ``{t}_class`` columns, for drift checks."""
        if self._reference is None:
            self._reference = pd.read_parquet(self.path / self.manifest["reference"])
        return self._reference.copy()


def _read_part(path: Path, name: str, from_dict: Any) -> Any:
    """A learnt part of the bundle at ``path`` (None where it holds none: an older bundle's)."""
    file = path / name
    return from_dict(json.loads(file.read_text())) if file.is_file() else None


def _write_part(path: Path, name: str, part: Any) -> None:
    """Store a part learnt from a history's jobs, which training's table does not hold."""
    from scoutless.atomic import atomic_write_text

    atomic_write_text(path / name, json.dumps(part.to_dict()))


def read_job_spreads(path: Path) -> SpreadTable | None:
    """The bundle's jobs' spread (None where it holds none)."""
    return _read_part(path, JOB_SPREADS, SpreadTable.from_dict)


def write_job_spreads(path: Path, table: SpreadTable) -> None:
    _write_part(path, JOB_SPREADS, table)


def read_room_loads(path: Path) -> RoomLoads | None:
    """The bundle's room loads (None where it holds none)."""
    return _read_part(path, ROOM_LOADS, RoomLoads.from_dict)


def write_room_loads(path: Path, loads: RoomLoads) -> None:
    _write_part(path, ROOM_LOADS, loads)


def load_bundle(path: str | Path) -> Predictor:
    """The Predictor of a bundle folder (or of a registry's champion bundle)."""
    path = resolve_champion(Path(path))
    manifest = read_manifest(path)
    encoder = FeatureEncoder.from_dict(json.loads((path / ENCODER).read_text()))
    models: dict[str, dict[str, ClassModel]] = {}
    for target, by_name in manifest["models"].items():
        models[target] = {}
        for name, entry in by_name.items():
            kind = entry.get("kind", name)
            try:
                cls = family_class(kind)
            except UnknownFamilyError as exc:
                raise BundleError(
                    f"{path}: model {target}/{name} of unknown kind {kind!r}"
                ) from exc
            models[target][name] = cls.load(path / entry["folder"])
    value_models = {
        target: LogValueModel.load(path / entry["folder"])
        for target, entry in manifest.get("value_models", {}).items()
    }
    predictor = Predictor(path, manifest, encoder, models, value_models)
    if predictor.library_warning:
        logger.warning("bundle %s %s", path, predictor.library_warning)
    return predictor
