"""Machine code for the service's hot paths (numba), built once and switched on or off.

The tree walk (:mod:`scoutless.models.tree_walk`) and the cost grid
(:mod:`scoutless.allocation.cost_kernels`) each compile at the service's start, never on a
request; the command line and the replay keep numpy, and the tests switch between the two
to compare them. A missing or broken numba leaves numpy serving the same answers, logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Compiled(Generic[T]):
    """``build()``'s result once :meth:`load` has run (``active``; None: numpy serves).
    :meth:`unload` switches it off and keeps it (``built``), so a later load does not
    compile again."""

    def __init__(self, what: str, build: Callable[[], T]) -> None:
        self.what = what
        self.build = build
        self.built: T | None = None
        self.active: T | None = None

    def load(self) -> bool:
        """Compile (or read from numba's cache); False, logged, where it cannot."""
        if self.built is None:
            try:
                self.built = self.build()
            except ImportError as exc:  # numba is a dependency; a broken install falls back
                log.warning("%s in numpy: numba unavailable (%s)", self.what, exc)
            except Exception as exc:  # e.g. no writable cache folder (NUMBA_CACHE_DIR)
                log.warning("%s in numpy: numba could not compile it (%s)", self.what, exc)
        self.active = self.built
        return self.active is not None

    def unload(self) -> None:
        """Back to numpy (tests compare the two)."""
        self.active = None
