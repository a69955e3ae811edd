"""The DNN's hyperparameters: one frozen record per fit, JSON round-trip for the manifest."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class DNNParams:
    """Hyperparameters of one DNN fit (what the random search varies)."""

    learning_rate: float = 3e-3
    weight_decay: float = 1e-5
    #: large batches keep CPU training fast (more samples per step for the same per-step
    #: overhead), with the learning rate raised to keep the accuracy of smaller ones
    batch_size: int = 2048
    d_hidden: tuple[int, ...] = (256, 128, 64)
    dropouts: tuple[float, ...] = (0.4, 0.3, 0.3)
    max_epochs: int = 40
    patience: int = 4
    #: weight of an auxiliary regression on the standardised log target value (0: off);
    #: it tells the network how far inside its class each task lies (ordinal information)
    aux_weight: float = 0.0
    #: epochs without a better validation accuracy before the learning rate is cut by
    #: ``lr_decay`` (0: never); below ``patience`` so a plateau gets a smaller step first
    lr_decay_patience: int = 2
    lr_decay: float = 0.3
    #: "softmax": free logits (the reference); "ordinal": cumulative-link head (ordered classes)
    head: str = "softmax"
    #: piecewise-linear embedding of the numericals: quantile bins per column (0: raw values)
    ple_bins: int = 0
    ple_dim: int = 8
    #: "plateau": cut the rate when validation stalls (the reference); "onecycle": warm up to
    #: ``learning_rate`` over the first 30 % of ``max_epochs`` then anneal (cosine) to ~0
    schedule: str = "plateau"
    #: exponent on the given class weights (1: as given, the reference; 0: unweighted, which
    #: targets accuracy; between: rare classes still count more, without dominating)
    class_weight_power: float = 1.0

    def __post_init__(self) -> None:
        if self.head not in ("softmax", "ordinal"):
            raise ValueError(f"{self.head=} must be 'softmax' or 'ordinal'")
        if self.schedule not in ("plateau", "onecycle"):
            raise ValueError(f"{self.schedule=} must be 'plateau' or 'onecycle'")
        if self.ple_bins < 0 or self.ple_dim < 1:
            raise ValueError(f"{self.ple_bins=} must be >= 0 and {self.ple_dim=} >= 1")
        if self.learning_rate <= 0 or self.weight_decay < 0:
            raise ValueError(f"{self.learning_rate=} must be > 0 and {self.weight_decay=} >= 0")
        if self.batch_size < 2 or self.max_epochs < 1 or self.patience < 1:
            raise ValueError(f"{self.batch_size=} >= 2, {self.max_epochs=}, {self.patience=} >= 1")

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    def options(self) -> dict[str, Any]:
        """The choices beyond the reference architecture (for the manifest and reports)."""
        return {
            "head": self.head,
            "aux_weight": self.aux_weight,
            "ple_bins": self.ple_bins,
            "schedule": self.schedule,
            "class_weight_power": self.class_weight_power,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DNNParams:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})
