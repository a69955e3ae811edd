"""The tree walk of :mod:`.xgb_inference` compiled (numba), for the service's few rows.

A served request walks twelve ensembles (four targets' classifiers and their value
models' location and scale), and most of the numpy walk's cost is the fixed cost of a
dozen numpy calls, not the trees. Compiled, each row walks each tree from its root to its
leaf in a loop, with no call per level.

The decisions and the sums are the numpy walk's, so the margins are equal bit for bit:
a NaN takes the node's default child; a numerical split goes right unless
``x < threshold`` in float32; a categorical split goes right iff its category (the code
truncated to an integer, within ``[0, width)``) is among its keys; each class's margin is
the intercept, then each round's leaf, added in tree order in float32 (no fast-math:
LLVM neither reorders nor fuses them). Softmax stays in numpy (its ``exp`` is not libm's).

Compiling takes longer than a one-task command, so numba is imported only by
:func:`load`: the service calls it at
start (and warms every ensemble of its bundle then, never on a request); the command
line, which predicts a task or two, keeps the numpy walk and never imports numba. The
machine code is cached on disk (``cache=True``) for the next start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from scoutless.compiled import Compiled


def kernel() -> Callable[..., np.ndarray] | None:
    """The compiled walk if :func:`load` made it, else None."""
    return _CODE.active


def load() -> bool:
    """Compile (or read from numba's cache) the walk; False (logged) without numba."""
    return _CODE.load()


def unload() -> None:
    """Back to the numpy walk (tests compare the two)."""
    _CODE.unload()


def _compile() -> Callable[..., np.ndarray]:
    import numba

    signature = (
        "float32[:, ::1](float32[:, ::1], intp[::1], intp[::1], intp[::1], float32[::1], "
        "boolean[::1], boolean[::1], intp[::1], int64[::1], boolean[::1], int64, float32[::1], "
        "int64)"
    )
    return numba.njit(signature, cache=True, nogil=True, boundscheck=False)(_margins)


#: the walk, compiled by :func:`load` (:class:`~scoutless.compiled.Compiled`)
_CODE: Compiled[Callable[..., np.ndarray]] = Compiled("tree walk", _compile)


def _margins(
    X: Any, roots: Any, left: Any, feature: Any, threshold: Any, default_right: Any,
    inner: Any, category_rank: Any, right_keys: Any, listed: Any, width: int, value: Any,
    n_classes: int,
) -> Any:  # fmt: skip
    """(n, n_classes) float32 margins of ``X`` (compiled by :func:`_compile`; plain
    Python otherwise, for reading only). A category goes right where its key
    (``rank * width + code``) is set in ``listed``, the dense table, or else (an empty
    table: too large) is among the sorted ``right_keys``."""
    n, n_trees, n_keys = X.shape[0], roots.shape[0], right_keys.shape[0]
    dense = listed.shape[0] > 0
    out = np.zeros((n, n_classes), dtype=np.float32)
    for t in range(n_trees):  # trees outside: a tree's nodes stay in cache for every row
        for i in range(n):
            node = roots[t]
            while inner[node]:
                x = X[i, feature[node]]
                rank = category_rank[node]
                if np.isnan(x):
                    right = default_right[node]
                elif rank >= 0:
                    right = False
                    if x >= 0 and x < width:
                        key = rank * width + int(x)
                        if dense:
                            right = listed[key]
                        else:
                            at = np.searchsorted(right_keys, key)
                            right = at < n_keys and right_keys[at] == key
                else:
                    right = not x < threshold[node]
                node = left[node] + 1 if right else left[node]
            out[i, t % n_classes] += value[node]
    return out
