"""The DNN's training rows as a sharded Parquet table that each torchrun rank reads its
share of (shard ``i`` belongs to rank ``i % world_size``).

The client writes what single-process training would feed the network: the encoded fit
rows (vocabulary codes, standardised numericals), labels and the auxiliary target
(standardised over *all* fit rows, as :func:`~scoutless.models.dnn_inputs.aux_target`
does), the validation rows, and a ``spec.json`` with the model's constructor arguments
and class weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoutless.features.encoded import EncodedFeatures
from scoutless.models.dnn_inputs import aux_target
from scoutless.models.dnn_model import DNNModel

SPEC_FILE = "spec.json"
VALIDATION_FILE = "validation.parquet"


class ShardError(RuntimeError):
    """A rank found no rows to train on, or a work folder is incomplete."""


def _frame(X: EncodedFeatures, labels: np.ndarray, aux: np.ndarray | None) -> pd.DataFrame:
    columns: dict[str, np.ndarray] = {f"code_{j}": X.codes[:, j] for j in range(X.codes.shape[1])}
    columns.update({f"num_{j}": X.numeric[:, j] for j in range(X.numeric.shape[1])})
    columns["label"] = np.asarray(labels, dtype=np.int64)
    if aux is not None:
        columns["aux"] = aux
    return pd.DataFrame(columns)


def _encoded(frame: pd.DataFrame) -> tuple[EncodedFeatures, np.ndarray, np.ndarray | None]:
    codes = frame.filter(regex=r"^code_").to_numpy(dtype=np.int64)
    numeric = frame.filter(regex=r"^num_").to_numpy(dtype=np.float32)
    aux = frame["aux"].to_numpy(dtype=np.float32) if "aux" in frame else None
    return EncodedFeatures(codes, numeric), frame["label"].to_numpy(np.int64), aux


def write_shards(
    work: Path,
    model: DNNModel,
    X: EncodedFeatures,
    y: np.ndarray,
    *,
    eval_set: tuple[EncodedFeatures, np.ndarray],
    class_weight: np.ndarray | None,
    values: np.ndarray | None,
    n_shards: int,
) -> None:
    """Everything a rank needs, in ``work`` (a folder every node can read)."""
    work.mkdir(parents=True, exist_ok=True)
    use_aux = model.params.aux_weight > 0 and values is not None
    aux = aux_target(values) if use_aux else None
    fit = _frame(X, y, aux)
    for i, rows in enumerate(np.array_split(np.arange(len(fit)), n_shards)):
        fit.iloc[rows].to_parquet(work / f"fit-{i:05d}.parquet", index=False)
    _frame(eval_set[0], eval_set[1], None).to_parquet(work / VALIDATION_FILE, index=False)
    spec = {
        "n_classes": model.n_classes,
        "cardinalities": model.cardinalities,
        "n_numerical": model.n_numerical,
        "params": model.params.to_dict(),
        "seed": model.seed,
        "class_weight": None if class_weight is None else [float(w) for w in class_weight],
        "n_shards": n_shards,
    }
    (work / SPEC_FILE).write_text(json.dumps(spec, indent=1))


@dataclass
class RankData:
    """One rank's share of the fit rows, plus the (whole) validation set."""

    spec: dict[str, Any]
    X: EncodedFeatures
    y: np.ndarray
    aux: np.ndarray | None
    X_val: EncodedFeatures
    y_val: np.ndarray


def read_rank_share(work: Path, rank: int, world_size: int) -> RankData:
    """Shards ``rank, rank + world_size, …`` of the fit rows and the validation rows."""
    spec_path = work / SPEC_FILE
    if not spec_path.exists():
        raise ShardError(f"{work}: no {SPEC_FILE}; write_shards() has not run there")
    spec = json.loads(spec_path.read_text())
    mine = [work / f"fit-{i:05d}.parquet" for i in range(rank, spec["n_shards"], world_size)]
    fit = pd.concat([pd.read_parquet(p) for p in mine], ignore_index=True) if mine else None
    if fit is None or fit.empty:
        raise ShardError(
            f"rank {rank} of {world_size} has no rows: {spec['n_shards']} shards in {work}"
        )
    X, y, aux = _encoded(fit)
    X_val, y_val, _ = _encoded(pd.read_parquet(work / VALIDATION_FILE))
    return RankData(spec, X, y, aux, X_val, y_val)
