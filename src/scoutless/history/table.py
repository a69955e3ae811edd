"""The training table: one row per task, features + targets + splits, and what they mean.

Saved as Parquet; the feature list, bins and provenance travel in the file's metadata so a
table from PanDA history and one imported from a Slurm trace are used the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from scoutless.features.spec import MEASURED_COLUMNS, FeatureSpec
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import class_col, value_col

META_KEY = b"scoutless"
SplitKind = Literal["random", "time"]
SPLIT_COLUMNS: dict[str, str] = {"random": "split_random", "time": "split_time"}


def frame_fingerprint(frame: pd.DataFrame, metadata: dict[str, Any] | None = None) -> str:
    """sha256 (hex) over a frame's rows and, if given, metadata: same data, same print."""
    digest = hashlib.sha256(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    if metadata is not None:
        digest.update(json.dumps(metadata, sort_keys=True, default=str).encode())
    return digest.hexdigest()


class TableError(ValueError):
    """A training table that is missing what its metadata promises."""


@dataclass
class TrainingTable:
    frame: pd.DataFrame
    features: list[FeatureSpec]
    bins: dict[str, TargetBins]
    source: str = "panda"
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    @property
    def targets(self) -> list[str]:
        return list(self.bins)

    @property
    def default_split(self) -> SplitKind:
        """The split its source recommends: traces are judged on their latest submissions."""
        return "time" if self.info.get("split") == "time" else "random"

    @property
    def feature_names(self) -> list[str]:
        return [f.name for f in self.features]

    def validate(self) -> None:
        missing = [c for c in self.feature_names if c not in self.frame.columns]
        for t in self.targets:
            missing += [c for c in (value_col(t), class_col(t)) if c not in self.frame.columns]
        if missing:
            raise TableError(f"training table lacks columns {missing}")
        leaked = sorted(set(self.feature_names) & MEASURED_COLUMNS)
        if leaked:
            raise TableError(f"measured columns used as features (leakage): {leaked}")

    def split(self, kind: SplitKind = "random") -> tuple[pd.DataFrame, pd.DataFrame]:
        """(train, test) rows by the table's stored split column."""
        col = SPLIT_COLUMNS[kind]
        if col not in self.frame.columns:
            raise TableError(f"training table has no {col!r} column")
        is_test = self.frame[col] == "test"
        return self.frame[~is_test], self.frame[is_test]

    def X(self, frame: pd.DataFrame | None = None) -> pd.DataFrame:
        return (self.frame if frame is None else frame)[self.feature_names]

    def fingerprint(self) -> str:
        """Of the rows and the metadata (features, bins, source, info)."""
        return frame_fingerprint(self.frame, self.metadata())

    def metadata(self) -> dict[str, Any]:
        return {
            "features": [f.to_dict() for f in self.features],
            "bins": {t: b.to_dict() for t, b in self.bins.items()},
            "source": self.source,
            "info": self.info,
        }

    def save(self, path: str | Path) -> Path:
        """Write atomically: a crash leaves either the old file or the new one."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrow = pa.Table.from_pandas(self.frame, preserve_index=False)
        meta = dict(arrow.schema.metadata or {})
        meta[META_KEY] = json.dumps(self.metadata(), default=str).encode()
        arrow = arrow.replace_schema_metadata(meta)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        os.close(fd)
        try:
            pq.write_table(arrow, tmp)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | Path) -> TrainingTable:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"training table {path} does not exist")
        arrow = pq.read_table(path)
        raw = (arrow.schema.metadata or {}).get(META_KEY)
        if raw is None:
            raise TableError(f"{path}: not a scoutless training table (no metadata)")
        meta = json.loads(raw)
        return cls(
            frame=arrow.to_pandas(),
            features=[FeatureSpec.from_dict(f) for f in meta["features"]],
            bins={t: TargetBins.from_dict(b) for t, b in meta["bins"].items()},
            source=meta.get("source", "unknown"),
            info=meta.get("info", {}),
        )
