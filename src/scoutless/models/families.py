"""The model families scoutless trains and loads, listed once.

Training (which families exist), the bundle loader (which class reads a saved model) and
the CLI help all read this table. Classes are imported on first use: torch is heavy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importing this module stays cheap: the CLI reads FAMILY_NAMES
    from scoutless.models.base import ClassModel

#: family name -> (module, class); the class's ``name`` equals the key
FAMILIES: dict[str, tuple[str, str]] = {
    "xgb": ("scoutless.models.xgb", "XGBLabelModel"),
    "xgb_native": ("scoutless.models.xgb", "XGBNativeModel"),
    "dnn": ("scoutless.models.dnn_model", "DNNModel"),
}
FAMILY_NAMES: tuple[str, ...] = tuple(FAMILIES)


class UnknownFamilyError(KeyError):
    """A family name that is not in :data:`FAMILIES`."""


def family_class(name: str) -> type[ClassModel]:
    """The model class of family ``name`` (with ``load(folder)`` and the ClassModel API)."""
    if name not in FAMILIES:
        raise UnknownFamilyError(f"model family {name!r} unknown; choose from {list(FAMILIES)}")
    module, cls = FAMILIES[name]
    return getattr(import_module(module), cls)
