"""The training table: one row per task, features + targets + splits, and what they mean.

Saved as Parquet; the feature list, bins and provenance travel in the file's metadata so a
table from PanDA history and one imported from a Slurm trace are used the same way. A table
built on Dask is a folder of ``part-NNNNN.parquet`` files (rows in jeditaskid order) whose
``_common_metadata`` file holds the schema shared by all parts and the same metadata.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from scoutless.atomic import sibling_temp_file, sweep_leftovers
from scoutless.features.spec import MEASURED_COLUMNS, FeatureSpec
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import class_col, value_col

META_KEY = b"scoutless"
COMMON_METADATA = "_common_metadata"
PART_GLOB = "part-*.parquet"
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


def table_metadata(
    features: list[FeatureSpec], bins: dict[str, TargetBins], source: str, info: dict[str, Any]
) -> dict[str, Any]:
    """What a table's Parquet metadata holds besides the rows."""
    return {
        "features": [f.to_dict() for f in features],
        "bins": {t: b.to_dict() for t, b in bins.items()},
        "source": source,
        "info": info,
    }


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
        return table_metadata(self.features, self.bins, self.source, self.info)

    def save(self, path: str | Path) -> Path:
        """Write atomically: a crash leaves either the old file or the new one."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrow = pa.Table.from_pandas(self.frame, preserve_index=False)
        meta = dict(arrow.schema.metadata or {})
        meta[META_KEY] = json.dumps(self.metadata(), default=str).encode()
        arrow = arrow.replace_schema_metadata(meta)
        sweep_leftovers(path)
        fd, tmp = sibling_temp_file(path)
        try:
            with os.fdopen(fd, "wb") as fh:  # open, so held, while it is written
                pq.write_table(arrow, fh)
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
        arrow = read_parts(path) if path.is_dir() else pq.read_table(path)
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


def part_files(folder: str | Path) -> list[Path]:
    """The part files of a partitioned table, in row order."""
    return sorted(Path(folder).glob(PART_GLOB))


def read_parts(folder: str | Path, files: list[Path] | None = None) -> pa.Table:
    """Rows of a partitioned table (all parts, or ``files``) under its common schema.

    A folder without ``_common_metadata`` is incomplete (its build did not finish)."""
    folder = Path(folder)
    common = folder / COMMON_METADATA
    if not common.exists():
        raise TableError(f"{folder}: no {COMMON_METADATA}: not a complete partitioned table")
    schema = pq.read_schema(common)
    files = part_files(folder) if files is None else files
    if not files:
        return schema.empty_table()
    parts = [pq.read_table(f, schema=schema) for f in files]
    return pa.concat_tables(parts).replace_schema_metadata(schema.metadata)


def write_common_metadata(folder: str | Path, metadata: dict[str, Any]) -> pa.Schema:
    """Unify the parts' schemas (a column all-missing in one part takes the others' type)
    and write it with the table's metadata; written last, it marks the table complete."""
    folder = Path(folder)
    schemas = [pq.read_schema(f) for f in part_files(folder)]
    schema = pa.unify_schemas(schemas, promote_options="permissive")
    meta = dict(schemas[0].metadata or {})
    meta[META_KEY] = json.dumps(metadata, default=str).encode()
    schema = schema.with_metadata(meta)
    pq.write_metadata(schema, folder / COMMON_METADATA)
    return schema
