"""scoutless: predict task resource classes at submission time, without scout jobs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scoutless.bundle import Predictor, load_bundle

#: the release (pyproject.toml reads it; CHANGELOG.md says what each one changed)
__version__ = "0.2.0"

__all__ = ["Predictor", "__version__", "load_bundle"]


def __getattr__(name: str) -> Any:
    """Load the bundle API on first use: ``import scoutless`` stays cheap (no torch/xgboost)."""
    if name in {"Predictor", "load_bundle"}:
        from scoutless import bundle

        return getattr(bundle, name)
    raise AttributeError(f"module 'scoutless' has no attribute {name!r}")
