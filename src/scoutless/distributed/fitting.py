"""The model fitter ``--scheduler`` hands to :func:`~scoutless.training.train_bundle`:
XGBoost families on the Dask cluster, the DNN on torchrun ranks; everything else about
training (parts, encoders, class weights, metrics, champion, bundle) stays the single path's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from scoutless.config import DistributedSettings
from scoutless.features.encoded import EncodedFeatures
from scoutless.models.base import ClassModel
from scoutless.models.dnn_model import DNNModel
from scoutless.models.xgb import XGBModel

if TYPE_CHECKING:
    from distributed import Client


@dataclass
class DistributedFitter:
    """Fits each model where it scales: ``client`` for XGBoost, torchrun for the DNN.

    ``work_root`` keeps the DDP work folders (shards, per-rank replicas) for inspection;
    by default they are temporary."""

    client: Client | None
    nproc_per_node: int = 2
    torchrun_args: tuple[str, ...] = ()
    n_shards: int = 16
    work_root: Path | None = None
    _runs: int = field(default=0, init=False)

    def __call__(
        self,
        model: ClassModel,
        X: EncodedFeatures,
        y: np.ndarray,
        *,
        eval_set: tuple[EncodedFeatures, np.ndarray],
        class_weight: np.ndarray | None = None,
        values: np.ndarray | None = None,
    ) -> ClassModel:
        if isinstance(model, DNNModel):
            from scoutless.distributed.ddp import fit_dnn_with_torchrun

            self._runs += 1
            return fit_dnn_with_torchrun(
                model, X, y, eval_set=eval_set, class_weight=class_weight, values=values,
                nproc_per_node=self.nproc_per_node, extra_args=self.torchrun_args,
                n_shards=max(self.n_shards, self.nproc_per_node), work=self._work(),
            )  # fmt: skip
        if isinstance(model, XGBModel) and self.client is not None:
            from scoutless.distributed.xgb import fit_xgb_on_dask

            return fit_xgb_on_dask(
                self.client, model, X, y, eval_set=eval_set, class_weight=class_weight
            )
        return model.fit(X, y, eval_set=eval_set, class_weight=class_weight, values=values)

    @classmethod
    def from_settings(
        cls, client: Client | None, settings: DistributedSettings
    ) -> DistributedFitter:
        return cls(
            client,
            nproc_per_node=settings.torchrun_nproc_per_node,
            torchrun_args=tuple(settings.torchrun_args),
            n_shards=settings.dnn_shards,
            work_root=settings.dnn_work_root,
        )

    def _work(self) -> Path | None:
        return None if self.work_root is None else self.work_root / f"dnn-{self._runs}"
