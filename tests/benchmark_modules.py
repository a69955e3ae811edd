"""The scripts of ``benchmarks/`` as modules, for tests of their measures: they import one
another as top-level modules (``record``, ``serve_world`` …), so their folder is put on
``sys.path`` while one is loaded and used."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@contextmanager
def benchmark_module(name: str) -> Iterator[ModuleType]:
    """``benchmarks/<name>.py`` imported, its folder on ``sys.path`` until the block ends."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))
