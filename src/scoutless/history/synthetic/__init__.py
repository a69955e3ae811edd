"""Realistic synthetic PanDA history with a known Bayes limit (see :mod:`.latent`)."""

from scoutless.history.synthetic.block import Frames
from scoutless.history.synthetic.truth import bayes_probabilities, read_truth, synthetic_truth
from scoutless.history.synthetic.writer import (
    GenerationStats,
    generate_chunk,
    generate_history,
    iter_chunks,
)

__all__ = [
    "Frames",
    "GenerationStats",
    "bayes_probabilities",
    "generate_chunk",
    "generate_history",
    "iter_chunks",
    "read_truth",
    "synthetic_truth",
]
