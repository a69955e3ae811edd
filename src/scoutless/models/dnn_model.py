"""The DNN family as a per-target classifier following :class:`~scoutless.models.base.ClassModel`.

Fit builds a :class:`TabularMLP`, trains it with class-weighted cross-entropy
(:func:`~scoutless.models.dnn_trainer.fit_module`), then fits a temperature on the
validation logits so the softmax is calibrated. A few rows are predicted through the
numpy forward pass (:mod:`~scoutless.models.dnn_inference`), batches through the same
folded weights in torch; training's validation runs the module itself.
"""

from __future__ import annotations

import copy
import io
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scoutless.fast_paths import current
from scoutless.features.encoded import EncodedFeatures
from scoutless.models.base import check_fitted, check_labels
from scoutless.models.dnn_inference import InferenceWeights
from scoutless.models.dnn_inputs import aux_target, feature_tensors, numeric_input
from scoutless.models.dnn_params import DNNParams
from scoutless.models.temperature import fit_temperature, softmax

if TYPE_CHECKING:  # torch is imported where a module is built, trained or read
    import torch

    from scoutless.models.dnn import TabularMLP
    from scoutless.models.dnn_trainer import EpochCallback

#: attributes fit/load set; dropped by :meth:`DNNModel.with_params`
FITTED = ("module_", "classes_", "d_aux_", "batch_size_", "best_epoch_", "temperature_",
          "history_", "_inference", "variant_", "_state")  # fmt: skip
#: the eval-mode weights as numpy arrays, beside the state dict (read without torch)
INFERENCE_FILE = "dnn_inference.npz"


_INIT_LOCK = threading.Lock()
#: validation rows early stopping looks at (a random subset above this; the temperature
#: and every reported metric use all of them)
EARLY_STOPPING_ROWS = 50_000


def _stopping_rows(y_val: np.ndarray, seed: int) -> np.ndarray | None:
    if len(y_val) <= EARLY_STOPPING_ROWS:
        return None
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(len(y_val), EARLY_STOPPING_ROWS, replace=False))


def _in_chunks(
    forward: Callable[[torch.Tensor, torch.Tensor], np.ndarray],
    codes: torch.Tensor,
    numeric: torch.Tensor,
) -> np.ndarray:
    """``forward`` over ``FastPaths.dnn_chunk_rows`` rows at a time (peak memory),
    concatenated."""
    chunk = current().dnn_chunk_rows
    starts = range(0, max(len(codes), 1), chunk)
    parts = [forward(codes[s : s + chunk], numeric[s : s + chunk]) for s in starts]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def seeded_module(build: Callable[[], TabularMLP], seed: int) -> TabularMLP:
    """``build()`` with its initial weights drawn from ``seed``, and its dropout layers given
    their own generator (seeded from ``seed`` too). Training then touches no global random
    state, so fits in concurrent threads are each as reproducible as alone; the lock keeps
    one thread's seeding from interleaving with another's initialisation."""
    import torch

    from scoutless.models.dnn import Dropout

    with _INIT_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = build()
    generator = torch.Generator().manual_seed(seed + 1)
    for layer in module.modules():
        if isinstance(layer, Dropout):
            layer.generator = generator
    return module


class DNNModel:
    """Per-target classifier: :class:`TabularMLP` trained with class-weighted cross-entropy."""

    name: ClassVar[str] = "dnn"

    def __init__(
        self,
        *,
        n_classes: int,
        cardinalities: Sequence[int],
        n_numerical: int,
        params: DNNParams | None = None,
        seed: int = 42,
        on_epoch: EpochCallback | None = None,
    ) -> None:
        self.n_classes = n_classes
        self.cardinalities = list(cardinalities)
        self.n_numerical = n_numerical
        self.params = params or DNNParams()
        self.seed = seed
        self.on_epoch = on_epoch

    def _new_module(self, d_aux: int = 0) -> TabularMLP:
        from scoutless.models.dnn import TabularMLP

        p = self.params
        return TabularMLP(
            cardinalities=self.cardinalities,
            d_numerical=2 * self.n_numerical,
            n_classes=self.n_classes,
            d_hidden=self.params.d_hidden,
            dropouts=self.params.dropouts,
            d_aux=d_aux,
            ple=(self.n_numerical, p.ple_bins, p.ple_dim)
            if p.ple_bins and self.n_numerical
            else None,
            head=p.head,
        )

    def _prepare_module(self, X: EncodedFeatures, y: np.ndarray, aux: np.ndarray | None) -> None:
        """Data-fitted parts of a new module: PLE bin edges, ordinal cut points (the class
        boundaries on the standardised log value when the head is tied to it)."""
        from scoutless.models.numeric_embedding import quantile_edges
        from scoutless.models.ordinal import CumulativeLinkHead, boundaries

        if self.module_.ple is not None:
            self.module_.ple.set_edges(quantile_edges(X.numeric, self.params.ple_bins))
        head = self.module_.head
        tied = self.module_.tied_aux and aux is not None and np.isfinite(aux).any()
        if isinstance(head, CumulativeLinkHead) and tied:
            head.set_cuts(boundaries(aux, y, self.n_classes), trainable=False)
        elif isinstance(head, CumulativeLinkHead):
            head.init_cuts(y)

    def fit(
        self,
        X: EncodedFeatures,
        y: np.ndarray,
        *,
        eval_set: tuple[EncodedFeatures, np.ndarray],
        class_weight: np.ndarray | None = None,
        values: np.ndarray | None = None,
    ) -> DNNModel:
        """``values``: the target's continuous values of the rows, for the auxiliary loss."""
        import torch

        from scoutless.models.dnn_trainer import TrainTensors, effective_batch_size, fit_module

        y = check_labels(y, self.n_classes, "dnn.fit")
        X_val, y_val = eval_set
        y_val = check_labels(y_val, self.n_classes, "dnn.fit eval_set")
        aux = aux_target(values) if self.params.aux_weight > 0 and values is not None else None
        self._inference = None
        self.d_aux_ = 0 if aux is None else 1
        self.batch_size_ = effective_batch_size(self.params.batch_size, len(y))
        self.module_ = seeded_module(lambda: self._new_module(self.d_aux_), self.seed)
        self._prepare_module(X, y, aux)
        codes, numeric = feature_tensors(X)
        data = TrainTensors(
            codes, numeric, torch.from_numpy(y), None if aux is None else torch.from_numpy(aux)
        )
        # early stopping watches at most EARLY_STOPPING_ROWS validation rows: at 1M tasks the
        # whole validation part cost 7 % of every epoch, for a precision it does not need
        watch = _stopping_rows(y_val, self.seed)
        val_codes, val_numeric = feature_tensors(X_val if watch is None else X_val.take(watch))
        y_watch = y_val if watch is None else y_val[watch]

        def validate() -> float:
            predicted = self._torch_logits(val_codes, val_numeric).argmax(axis=1)
            return float((predicted == y_watch).mean())

        weight = self._loss_weight(class_weight)
        result = fit_module(
            self.module_, data, self.params, validate=validate, class_weight=weight,
            seed=self.seed, on_epoch=self.on_epoch,
        )  # fmt: skip
        self.best_epoch_, self.history_ = result.best_epoch, result.history
        self.classes_ = np.arange(self.n_classes)
        self.temperature_ = fit_temperature(self.predict_logits(X_val), y_val)
        return self

    def _loss_weight(self, class_weight: np.ndarray | None) -> torch.Tensor | None:
        """The class weights raised to ``class_weight_power`` (absent classes stay at 0)."""
        if class_weight is None:
            return None
        import torch

        weight = np.power(np.asarray(class_weight, dtype=float), self.params.class_weight_power)
        weight[np.asarray(class_weight) == 0] = 0.0
        return torch.as_tensor(weight, dtype=torch.float32)

    def _torch_logits(self, codes: torch.Tensor, numeric: torch.Tensor) -> np.ndarray:
        import torch

        self.module_.eval()
        with torch.inference_mode():
            return _in_chunks(
                lambda c, n: self.module_(c, n).numpy().astype(np.float64), codes, numeric
            )

    def predict_logits(self, X: EncodedFeatures) -> np.ndarray:
        """(n, n_classes) raw logits, in eval mode without autograd."""
        check_fitted(self, "classes_")
        if self._inference is None:
            self._inference = InferenceWeights.of(self.module_)
        if len(X) <= current().rows:
            return self._inference.logits(X.codes, numeric_input(X.numeric))
        return _in_chunks(self._inference.torch_logits, *feature_tensors(X))

    def __getattr__(self, name: str) -> Any:
        """``module_`` of a loaded model, built from its state dict when first asked for (the
        file's bytes, read at load: the model stays the one loaded if the file changes)."""
        state = self.__dict__.get("_state")
        if name != "module_" or state is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        import torch

        module = self._new_module(self.d_aux_)
        module.load_state_dict(torch.load(io.BytesIO(state), weights_only=True))
        self.module_ = module.eval()
        return self.module_

    def predict_proba(self, X: EncodedFeatures) -> np.ndarray:
        return softmax(self.predict_logits(X) / self.temperature_)

    def hyperparameters(self) -> dict[str, Any]:
        return {
            **self.params.to_dict(),
            "embedding_dims": [e.embedding_dim for e in self._new_module().embeddings],
            "batch_size_used": getattr(self, "batch_size_", None),
            "best_epoch": getattr(self, "best_epoch_", None),
            "temperature": getattr(self, "temperature_", None),
            "seed": self.seed,
            "options": self.params.options(),
        }

    def with_params(self, params: DNNParams) -> DNNModel:
        """An unfitted copy with other hyperparameters (for the search)."""
        clone = copy.copy(self)
        clone.params = replace(params)
        for attr in FITTED:
            clone.__dict__.pop(attr, None)
        return clone

    def save(self, folder: Path) -> list[str]:
        import torch

        check_fitted(self, "classes_")
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(self.module_.state_dict(), folder / "dnn.pt")
        if self._inference is None:
            self._inference = InferenceWeights.of(self.module_)
        self._inference.save(folder / INFERENCE_FILE)
        meta = {
            "n_classes": self.n_classes,
            "cardinalities": self.cardinalities,
            "n_numerical": self.n_numerical,
            "params": self.params.to_dict(),
            "seed": self.seed,
            "d_aux": self.d_aux_,
            "best_epoch": self.best_epoch_,
            "temperature": self.temperature_,
            "history": self.history_,
        }
        (folder / "dnn.json").write_text(json.dumps(meta, indent=1))
        return ["dnn.pt", "dnn.json", INFERENCE_FILE]

    @classmethod
    def load(cls, folder: Path) -> DNNModel:
        meta = json.loads((folder / "dnn.json").read_text())
        model = cls(
            n_classes=meta["n_classes"],
            cardinalities=meta["cardinalities"],
            n_numerical=meta["n_numerical"],
            params=DNNParams.from_dict(meta["params"]),
            seed=meta["seed"],
        )
        model.d_aux_ = int(meta.get("d_aux", 0))
        # the module is built from the state dict's bytes on first use (training on, a batch
        # through it): serving reads the arrays only; a bundle saved without them derives them
        model._state = (folder / "dnn.pt").read_bytes()
        arrays = folder / INFERENCE_FILE
        model._inference = (
            InferenceWeights.load(arrays) if arrays.exists() else InferenceWeights.of(model.module_)
        )
        model.best_epoch_ = meta["best_epoch"]
        model.temperature_ = float(meta["temperature"])
        model.history_ = meta["history"]
        model.classes_ = np.arange(model.n_classes)
        return model
