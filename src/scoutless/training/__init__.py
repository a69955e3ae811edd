"""Training: a TrainingTable in, a versioned model bundle out (the layer above bundle)."""

from __future__ import annotations

from scoutless.training.run import TrainingError, check_model_names, train_bundle

__all__ = ["TrainingError", "check_model_names", "train_bundle"]
