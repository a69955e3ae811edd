"""scoutless: predict task resource classes at submission time, without scout jobs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scoutless.bundle import Predictor, load_bundle

__all__ = ["Predictor", "load_bundle"]


def __getattr__(name: str) -> Any:
    """Load the bundle API on first use: ``import scoutless`` stays cheap (no torch/xgboost)."""
    if name in __all__:
        from scoutless import bundle

        return getattr(bundle, name)
    raise AttributeError(f"module 'scoutless' has no attribute {name!r}")
